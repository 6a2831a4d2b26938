import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../lib/privateFiles.js';
import type { LogEntry } from '../../kernel/Storage.js';

export type ArchiveFormat = 'jsonl' | 'csv';

/** One archived log record, as written. */
export interface ArchivedRow {
  log: string;
  seq: number;
  record: unknown;
}

const CSV_HEADER = 'log,seq,at,record\n';
const csvField = (v: string) => `"${v.replace(/"/g, '""')}"`;

/**
 * The export of one retention run for one kind of log: `<dir>/<kind>-<run time>.<jsonl|csv>`,
 * created 0600 (the ledger is private data). Each batch is appended and fsynced before the caller
 * deletes its rows, so a row is never gone from the store without being on disk here. A crash
 * between the two writes the batch again in the next run (rows carry their log and seq: dedupe
 * by them).
 */
export class ArchiveFile {
  private handle: FileHandle | undefined;
  rows = 0;

  constructor(
    private readonly dir: string,
    private readonly name: string,
    private readonly format: ArchiveFormat,
  ) {}

  get path(): string {
    return join(this.dir, `${this.name}.${this.format}`);
  }

  async write(log: string, entries: readonly LogEntry<unknown>[]): Promise<void> {
    if (!this.handle) {
      makePrivateDir(this.dir);
      this.handle = await open(this.path, 'a', PRIVATE_FILE_MODE);
      if (this.format === 'csv' && (await this.handle.stat()).size === 0) await this.handle.write(CSV_HEADER);
    }
    const text = entries.map((e) => this.line({ log, seq: e.seq, record: e.record })).join('');
    await this.handle.write(text);
    await this.handle.sync();
    this.rows += entries.length;
  }

  private line(row: ArchivedRow): string {
    if (this.format === 'jsonl') return `${JSON.stringify(row)}\n`;
    const at = typeof (row.record as { at?: unknown }).at === 'string' ? (row.record as { at: string }).at : '';
    return `${csvField(row.log)},${row.seq},${csvField(at)},${csvField(JSON.stringify(row.record))}\n`;
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}
