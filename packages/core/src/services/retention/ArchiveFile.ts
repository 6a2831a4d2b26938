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
  /** Bytes in the file: where the next batch begins. */
  private size = 0;
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
      this.size = (await this.handle.stat()).size;
      if (this.format === 'csv' && this.size === 0) await this.append(CSV_HEADER);
    }
    await this.append(entries.map((e) => this.line({ log, seq: e.seq, record: e.record })).join(''));
    await this.handle.sync();
    this.rows += entries.length;
  }

  /**
   * Append all of `text` or throw. One write(2) may write only part of it and report no error (a
   * filesystem with less room left than the batch): that part was taken for the whole batch, whose
   * records were then deleted from the store though the export held only some of them. A failure
   * cuts the file back to where the batch began, so the export never ends in half a line.
   */
  private async append(text: string): Promise<void> {
    const handle = this.handle!;
    const bytes = Buffer.from(text);
    const start = this.size;
    try {
      for (let at = 0; at < bytes.length; ) at += (await handle.write(bytes, at, bytes.length - at)).bytesWritten;
    } catch (err) {
      await handle.truncate(start).catch(() => undefined);
      throw err;
    }
    this.size = start + bytes.length;
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
