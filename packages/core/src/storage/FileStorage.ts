import { mkdir, readdir, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CoreError } from '../errors/index.js';
import { canonicalJson, expiresAtFor } from './canonicalJson.js';
import { lockDirectory, type DirectoryLock } from './fileLock.js';
import { encodeAppend, encodeDelete, encodeSet, type Slot } from './fileRecords.js';
import { writeSnapshot, type SnapshotCapture } from './fileSnapshot.js';
import { Journal, journalPath, syncDir } from './Journal.js';
import { frameLine } from './journalFormat.js';
import { recoverFileState, type RecoveredState } from './recoverFileState.js';
import type { IncrementOptions, LogEntry, SetOptions, Storage } from './Storage.js';

export interface FileStorageOptions {
  /**
   * Compact the journal into a snapshot once it is larger than this many bytes (and larger
   * than the last snapshot, so compaction cost stays proportional to the writes). Default 16 MiB.
   */
  compactAfterBytes?: number;
  /** How often expired keys are dropped from memory, in ms. Default 60000 (1 minute). */
  sweepIntervalMs?: number;
}

/**
 * The embedded default backend for a single server: the state lives in memory (reads never
 * touch the disk) and every mutation is appended to an fsynced journal before its promise
 * resolves, so an acknowledged write survives kill -9 and power loss. The journal is
 * compacted into a snapshot from time to time. One process per directory (a lock file).
 *
 * Mutations apply to memory synchronously and in call order, which makes increment and
 * compareAndSet atomic within the process; concurrent writers share fsyncs (group commit).
 * See docs/storage.md for the file layout and guarantees.
 */
export class FileStorage implements Storage {
  readonly kind = 'file' as const;
  /** What opening had to repair: bytes of a torn last record dropped from the journal. */
  readonly recovery: RecoveredState['dropped'];
  private readonly kv: Map<string, Slot>;
  private readonly logs: Map<string, string[]>;
  private readonly journal: Journal;
  private readonly sweepTimer: NodeJS.Timeout;
  private readonly compactAfterBytes: number;
  private lastN: number;
  private snapshotBytes: number;
  private compacting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly dir: string,
    private readonly lock: DirectoryLock,
    recovered: RecoveredState,
    journalFile: Awaited<ReturnType<typeof Journal.openFile>>,
    opts: FileStorageOptions,
  ) {
    this.kv = recovered.state.kv;
    this.logs = recovered.state.logs;
    this.lastN = recovered.lastN;
    this.snapshotBytes = recovered.snapshotBytes;
    this.recovery = recovered.dropped;
    this.compactAfterBytes = opts.compactAfterBytes ?? 16 * 1024 * 1024;
    this.journal = new Journal(journalFile, recovered.gen, recovered.journalLength, () => this.maybeCompact());
    this.sweepTimer = setInterval(() => this.sweep(), opts.sweepIntervalMs ?? 60_000);
    this.sweepTimer.unref();
  }

  /** Open (creating if needed) the data directory. Refused with CONFLICT when another process has it open. */
  static async open(dir: string, opts: FileStorageOptions = {}): Promise<FileStorage> {
    const root = resolve(dir);
    // Owner-only: the store holds sessions, keys and balances.
    await mkdir(root, { recursive: true, mode: 0o700 });
    const lock = await lockDirectory(root);
    try {
      const recovered = await recoverFileState(root);
      const fh = await Journal.openFile(root, recovered.gen, recovered.journalLength);
      return new FileStorage(root, lock, recovered, fh, opts);
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  async get<T>(key: string): Promise<T | undefined> {
    this.assertOpen();
    const slot = this.live(key);
    return slot === undefined ? undefined : (JSON.parse(slot.json) as T);
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.assertOpen();
    await this.put(key, canonicalJson(value), expiresAtFor(opts?.ttlMs));
  }

  async delete(key: string): Promise<boolean> {
    this.assertOpen();
    if (this.live(key) === undefined) return false;
    this.kv.delete(key);
    await this.commit(encodeDelete(++this.lastN, key));
    return true;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    this.assertOpen();
    const json = canonicalJson(value);
    const current = this.live(key);
    // Stored values are canonical JSON, so deep equality is string equality.
    const matches = expected === undefined ? current === undefined : current?.json === canonicalJson(expected);
    if (!matches) return false;
    await this.put(key, json, expiresAtFor(opts?.ttlMs));
    return true;
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    this.assertOpen();
    const slot = this.live(key);
    const current: unknown = slot === undefined ? 0 : JSON.parse(slot.json);
    const next = (typeof current === 'number' ? current : 0) + delta;
    if (opts?.min !== undefined && next < opts.min) return null;
    // An existing counter keeps its expiry; ttlMs only applies when the counter is created.
    await this.put(key, canonicalJson(next), slot ? slot.expiresAt : expiresAtFor(opts?.ttlMs));
    return next;
  }

  async keys(prefix: string): Promise<string[]> {
    this.assertOpen();
    const out: string[] = [];
    for (const k of this.kv.keys()) if (k.startsWith(prefix) && this.live(k) !== undefined) out.push(k);
    return out;
  }

  async append<T>(log: string, record: T): Promise<number> {
    this.assertOpen();
    const json = canonicalJson(record);
    let entries = this.logs.get(log);
    if (!entries) this.logs.set(log, (entries = []));
    entries.push(json);
    const seq = entries.length;
    await this.commit(encodeAppend(++this.lastN, log, json));
    return seq;
  }

  async readLog<T>(log: string, opts?: { after?: number; limit?: number }): Promise<LogEntry<T>[]> {
    this.assertOpen();
    const entries = this.logs.get(log) ?? [];
    const start = Math.max(0, opts?.after ?? 0);
    const end = opts?.limit === undefined ? entries.length : Math.min(entries.length, start + opts.limit);
    const out: LogEntry<T>[] = [];
    for (let i = start; i < end; i++) out.push({ seq: i + 1, record: JSON.parse(entries[i] as string) as T });
    return out;
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closing) return { ok: false, detail: 'closed' };
    if (this.journal.failure) return { ok: false, detail: 'journal write failed; restart the server' };
    return { ok: true };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweepTimer);
      try {
        await this.compacting;
        await this.journal.close();
      } finally {
        await this.lock.release();
      }
    })();
    return this.closing;
  }

  /** Write a value to memory now (so later calls see it) and resolve once it is durable. */
  private put(key: string, json: string, expiresAt: number | undefined): Promise<void> {
    this.kv.set(key, { json, expiresAt });
    return this.commit(encodeSet(++this.lastN, key, json, expiresAt));
  }

  private commit(payload: string): Promise<void> {
    return this.journal.write(frameLine(payload));
  }

  private live(key: string): Slot | undefined {
    const slot = this.kv.get(key);
    if (slot?.expiresAt !== undefined && slot.expiresAt <= Date.now()) {
      // No journal record needed: replay sees the expiry time and drops the key too.
      this.kv.delete(key);
      return undefined;
    }
    return slot;
  }

  private assertOpen(): void {
    if (this.closing) throw new CoreError('UNAVAILABLE', 'storage is closed');
    // After a failed write the memory may hold changes the disk does not: serve nothing.
    if (this.journal.failure) throw this.journal.failure;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, slot] of this.kv) if (slot.expiresAt !== undefined && slot.expiresAt <= now) this.kv.delete(k);
  }

  private maybeCompact(): void {
    if (this.compacting || this.closing) return;
    if (this.journal.size < Math.max(this.compactAfterBytes, this.snapshotBytes)) return;
    this.compacting = this.compact()
      .catch(() => undefined) // a failed compaction leaves the journals in place; the next batch retries
      .finally(() => {
        this.compacting = undefined;
      });
  }

  /**
   * Capture the state and switch to a new journal at one point between batches, then write the
   * snapshot in the background and delete the journals it covers. A crash at any step leaves
   * a snapshot plus journals that replay to the same state.
   */
  private async compact(): Promise<void> {
    const gen = this.journal.gen + 1;
    let capture: SnapshotCapture | undefined;
    await this.journal.runExclusive(async () => {
      capture = {
        gen,
        n: this.lastN,
        kv: [...this.kv],
        logs: [...this.logs].map(([name, entries]) => [name, entries, entries.length]),
      };
      await this.journal.switchTo(await Journal.openFile(this.dir, gen), gen);
    });
    if (!capture) return;
    this.snapshotBytes = await writeSnapshot(this.dir, capture);
    for (const name of await readdir(this.dir)) {
      const m = /^journal\.(\d+)\.log$/.exec(name);
      if (m && Number(m[1]) < gen) await unlink(journalPath(this.dir, Number(m[1])));
    }
    await syncDir(this.dir);
  }
}

