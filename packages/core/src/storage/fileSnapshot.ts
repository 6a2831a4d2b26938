import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreError } from '../errors/index.js';
import { applyRecord, asRecord, emptyState, encodeLogChunk, type FileState, type Slot } from './fileRecords.js';
import { syncDir } from './Journal.js';
import { frameLine, parseLines } from './journalFormat.js';

export const SNAPSHOT_FILE = 'snapshot';
const TEMP_FILE = 'snapshot.tmp';
const FORMAT_VERSION = 1;
const CHUNK_BYTES = 1 << 20;
const LOG_RECORDS_PER_LINE = 1000;

/**
 * What a snapshot holds, captured synchronously: the key/value entries (slots are immutable) and,
 * per log, the array and its length at capture time (logs only grow, so that prefix is fixed).
 */
export interface SnapshotCapture {
  gen: number;
  n: number;
  kv: Array<[string, Slot]>;
  logs: Array<[string, string[], number]>;
}

/**
 * Write a snapshot crash-safely: temp file, fsync, rename over the old one, fsync the directory.
 * Written in ~1 MiB chunks so the event loop keeps serving meanwhile. Returns its size in bytes.
 */
export async function writeSnapshot(dir: string, snap: SnapshotCapture, now = Date.now()): Promise<number> {
  const temp = join(dir, TEMP_FILE);
  const fh = await open(temp, 'w', 0o600);
  let bytes = 0;
  let records = 0;
  let chunk: string[] = [];
  let chunkLength = 0;
  const push = async (payload: string): Promise<void> => {
    const line = frameLine(payload);
    chunk.push(line);
    chunkLength += line.length;
    if (chunkLength >= CHUNK_BYTES) await drain();
  };
  const drain = async (): Promise<void> => {
    const data = Buffer.from(chunk.join(''), 'utf8');
    chunk = [];
    chunkLength = 0;
    for (let off = 0; off < data.length; ) {
      const { bytesWritten } = await fh.write(data, off, data.length - off, bytes + off);
      off += bytesWritten;
    }
    bytes += data.length;
  };
  try {
    await push(JSON.stringify({ o: 'h', version: FORMAT_VERSION, gen: snap.gen, n: snap.n }));
    for (const [k, slot] of snap.kv) {
      if (slot.expiresAt !== undefined && slot.expiresAt <= now) continue;
      const e = slot.expiresAt === undefined ? '' : `,"e":${slot.expiresAt}`;
      await push(`{"o":"s","k":${JSON.stringify(k)}${e},"v":${slot.json}}`);
      records++;
    }
    for (const [log, entries, length] of snap.logs) {
      for (let i = 0; i < length; i += LOG_RECORDS_PER_LINE) {
        await push(encodeLogChunk(log, entries.slice(i, Math.min(length, i + LOG_RECORDS_PER_LINE))));
        records++;
      }
    }
    await push(JSON.stringify({ o: 'f', records }));
    await drain();
    await fh.sync();
  } catch (err) {
    await fh.close();
    await rm(temp, { force: true });
    throw err;
  }
  await fh.close();
  await rename(temp, join(dir, SNAPSHOT_FILE));
  await syncDir(dir);
  return bytes;
}

export interface LoadedSnapshot {
  state: FileState;
  gen: number;
  n: number;
  bytes: number;
}

/**
 * Read the snapshot, strictly: it was installed complete by rename, so any invalid line means
 * the disk corrupted it, and the store refuses to open rather than serve a partial state.
 */
export async function readSnapshot(dir: string, now = Date.now()): Promise<LoadedSnapshot | undefined> {
  await rm(join(dir, TEMP_FILE), { force: true }); // debris of a compaction cut short
  const path = join(dir, SNAPSHOT_FILE);
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const corrupt = (why: string): CoreError =>
    new CoreError('INTERNAL', `file storage snapshot ${path} is corrupt (${why}); restore it from a backup`);
  const parsed = parseLines(buf);
  if (parsed.problem) throw corrupt(parsed.problem);
  const records = parsed.records.map(asRecord);
  const header = records[0];
  const footer = records[records.length - 1];
  if (header?.o !== 'h') throw corrupt('missing header');
  if (header.version !== FORMAT_VERSION) throw corrupt(`unknown format version ${header.version}`);
  if (footer?.o !== 'f' || footer.records !== records.length - 2) throw corrupt('missing or wrong footer');
  const state = emptyState();
  for (let i = 1; i < records.length - 1; i++) {
    const rec = records[i];
    if (!rec || rec.o === 'h' || rec.o === 'f') throw corrupt(`bad record ${i}`);
    applyRecord(state, rec, now);
  }
  return { state, gen: header.gen, n: header.n, bytes: buf.length };
}
