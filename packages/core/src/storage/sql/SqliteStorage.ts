import { statfsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CoreError } from '../../kernel/CoreError.js';
import { createPrivateFile, makePrivateDir } from '../../lib/privateFiles.js';
import { refuseRetiredJournalStore } from './retiredJournalStore.js';
import { StoreFault } from '../StoreFault.js';
import { canonicalJson, expiresAtFor, jsonText, keepsExpiry } from '../canonicalJson.js';
import type {
  IncrementOptions,
  LogEntry,
  KeyPage,
  LogPage,
  ReadLogOptions,
  SetOptions,
  Storage,
  TransactOptions,
  TxPlan,
  TxRead,
  TxWrite,
} from '../../kernel/Storage.js';
import { MIGRATIONS, MIGRATIONS_TABLE, PURGE_BATCH, prefixEnd, refuseNewerSchema } from './migrations.js';
import { KnownRows, type Row } from './KnownRows.js';
import { loadSqliteDriver } from './loadSqliteDriver.js';
import type { SqliteDatabase, SqliteDriver, SqliteDriverChoice, SqliteDriverName, SqliteStatement } from './SqliteDriver.js';
import { type PendingRow, SqliteWrites } from './SqliteWrites.js';

/** Options of the embedded SQLite store (the `storage.sqlite` config section). */
export interface SqliteStorageOptions {
  /** The database file, created 0600 (its WAL takes the same mode). Missing folders are created 0700. */
  file: string;
  /**
   * 'normal' (default): a commit survives a crash of the process (kill -9) but the last commits
   * may be lost on power failure; 'full': every commit is fsynced (survives power loss, slower).
   */
  synchronous?: 'normal' | 'full';
  /**
   * Which binding opens the file: 'auto' (default) = node:sqlite on Node 22.13+, else
   * better-sqlite3. Both read and write the same file format.
   */
  driver?: SqliteDriverChoice;
}

/** Keys per multi-key read statement (a transaction declares a handful; larger lists go in chunks). */
const MAX_IN = 16;

/** How often the database file's path is compared with the file open (SqliteStorage.checkFile). */
const FILE_CHECK_MS = 1000;

/** Logs whose last number is remembered (SqliteStorage.logEnds): forgotten all at once past this. */
const LOG_ENDS_KEPT = 10_000;

/** Free space below which a store whose last write failed still reports itself down. */
const MIN_FREE_BYTES = 1024 * 1024;

/**
 * What a store whose last write failed writes (and deletes) to show that writes work again:
 * more than any billing transaction writes. Free space on the filesystem is not enough: a file
 * size limit (RLIMIT_FSIZE, a quota, `max_page_count`) fails every write on a filesystem with room,
 * and a one-page write still fits in what the WAL file already holds.
 */
const PROBE_BYTES = 128 * 1024;
const PROBE_KEY = 'storage:writeprobe';

/**
 * The embedded store: one SQLite database file in WAL mode, opened by one server at a time
 * (exclusive locking: a second process gets a clear error instead of two servers sharing the
 * file). Both drivers are synchronous, so a transaction is one uninterrupted call: nothing can
 * interleave with it, in this process or another. Non-durable transactions wait for the next
 * commit (SqliteWrites).
 */
export class SqliteStorage implements Storage {
  readonly kind = 'sqlite' as const;
  private closed = false;
  /**
   * What the last failed statement said (a full disk, an I/O error), until a durable transaction
   * or the health check's write succeeds with room on the disk again: `SELECT 1` still answers on
   * a full disk, so health alone would say ok while every billing write fails.
   */
  private failure: string | undefined;
  /** Deletes rows past their expiry every few minutes (reads already skip them). */
  private readonly purger = setInterval(() => void this.purgeExpired().catch(() => undefined), 5 * 60_000).unref();
  private readonly st: ReturnType<typeof prepare>;
  /** Every write goes through it: non-durable transactions wait there for the next commit. */
  private readonly writes: SqliteWrites;
  /** Multi-key reads by key count (readIn). */
  private readonly readsIn: Array<SqliteStatement | undefined> = [];
  /** The rows of `kv` this process last read or wrote, read before SQLite (KnownRows). */
  private readonly known = new KnownRows();
  /**
   * The last number of logs appended to lately (push), so an append does not read its log's end
   * first: a metered call appends three lines. Exact while this one connection holds the file;
   * dropped whole when a statement fails (a rolled-back append's number was never used).
   */
  private readonly logEnds = new Map<string, number>();
  /** The database file's identity when it was opened (checkFile). */
  private readonly identity: { dev: number; ino: number } | undefined;
  /**
   * Set once the path no longer names the file this store writes (deleted or replaced while the
   * server runs): every call refuses with it from then on (see checkFile), and Storage.onFault's
   * listener (the runtime's error line) hears it once.
   */
  private readonly orphaned = new StoreFault();
  private lastFileCheck = Date.now();
  private readonly fileCheck = setInterval(() => this.checkFile(), FILE_CHECK_MS).unref();

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly sqlite: SqliteDriver,
    readonly file: string,
  ) {
    this.st = prepare(db);
    const st = statSync(file, { throwIfNoEntry: false });
    this.identity = st && { dev: st.dev, ino: st.ino };
    this.writes = new SqliteWrites(
      db,
      (err) => {
        this.logEnds.clear();
        this.recordFailure(err);
      },
      (key, row) => {
        if (row === null) this.st.del.run(key);
        else this.st.put.run(key, row.value, row.expires_at, row.due_at);
        this.known.set(key, row === null ? null : { key, ...row });
      },
    );
  }

  /** The binding this store runs on. */
  get driver(): SqliteDriverName {
    return this.sqlite.name;
  }

  /**
   * `PRAGMA synchronous` as SQLite reports it on this store's connection now: what
   * `storage.sqlite.synchronous` asked for, read back (a setting is per connection, not in the file).
   */
  synchronousMode(): 'off' | 'normal' | 'full' | 'extra' {
    return this.run(() => {
      const { synchronous } = this.db.prepare('PRAGMA synchronous').get() as { synchronous: number };
      return (['off', 'normal', 'full', 'extra'] as const)[Number(synchronous)] ?? 'off';
    });
  }

  static async open(opts: SqliteStorageOptions): Promise<SqliteStorage> {
    // Loaded only when used: memory, redis and postgres users load neither binding.
    const driver = await loadSqliteDriver(opts.driver);
    const file = resolve(opts.file);
    refuseRetiredJournalStore(file);
    try {
      makePrivateDir(dirname(file));
    } catch (err) {
      throw new CoreError(
        'UNAVAILABLE',
        `storage: cannot create the folder ${dirname(file)} for the database file: ${(err as Error).message}`,
        { cause: err },
      );
    }
    let db: SqliteDatabase;
    try {
      // 0600 before SQLite sees it: SQLite would create it 0644, and gives the WAL the file's mode.
      createPrivateFile(file);
      db = driver.open(file);
    } catch (err) {
      throw new CoreError('UNAVAILABLE', `storage: cannot open the database file ${file}: ${(err as Error).message}`, { cause: err });
    }
    try {
      // Exclusive before WAL: SQLite then keeps the WAL index in process memory (no -shm file)
      // and holds the file lock until close; BEGIN EXCLUSIVE takes it now rather than at first write.
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      db.exec('BEGIN EXCLUSIVE; COMMIT');
      migrate(db, file);
    } catch (err) {
      db.close();
      if (err instanceof CoreError) throw err;
      if (driver.isBusy(err)) {
        throw new CoreError(
          'CONFLICT',
          `storage: the database file ${file} is locked by another process (is another ai-backend server using this data directory?). ` +
            'Only one server may use an SQLite file; stop the other one, choose another storage.dir, or use PostgreSQL for several instances.',
          { cause: err },
        );
      }
      // Say which file: "file is not a database" alone does not tell an operator where to look.
      throw new CoreError('UNAVAILABLE', `storage: cannot use the database file ${file}: ${(err as Error).message}`, { cause: err });
    }
    return new SqliteStorage(db, driver, file);
  }

  private run<T>(fn: () => T): T {
    if (this.closed) throw new CoreError('UNAVAILABLE', 'storage is closed');
    if (Date.now() - this.lastFileCheck >= FILE_CHECK_MS) this.checkFile();
    if (this.orphaned.error) throw this.orphaned.error;
    try {
      return fn();
    } catch (err) {
      // A plan's refusal (a CoreError) comes before any write; anything else may have rolled back
      // appends whose numbers logEnds remembers. The rows known are dropped either way (cheap: the
      // next reads fill them again), so nothing a rollback undid can be read from there.
      this.known.clear();
      if (err instanceof CoreError) throw err;
      this.logEnds.clear();
      if (!this.recordFailure(err)) throw err;
      throw new CoreError('UNAVAILABLE', `storage unavailable: ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Is the database file still at its path? A file deleted while the server runs (its folder
   * removed, the volume cleaned) stays open, so every write still commits, into a file no path
   * names any more: gone when the process ends, and the next start creates an empty store in its
   * place (every balance lost, nothing said). So once a second (and before health answers, and at
   * close) the path is compared with the file opened; once it names none or another file, what
   * waits is committed, the whole store is copied through the open file to
   * `<file>.rescued-<time>` beside the path (VACUUM INTO: every acknowledged write, nothing lost),
   * and every call answers 503 with a message saying where the copy is, until the process is
   * replaced (docs/operations.md, "When a dependency is down").
   */
  private checkFile(): void {
    this.lastFileCheck = Date.now();
    if (this.orphaned.error || this.closed || !this.identity) return;
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(this.file, { throwIfNoEntry: false });
    } catch {
      return; // the path cannot be read now (a permission): no evidence that the file is gone
    }
    if (st && st.dev === this.identity.dev && st.ino === this.identity.ino) return;
    const what = st ? 'replaced by another file' : 'deleted';
    let rescued: string;
    try {
      const copy = `${this.file}.rescued-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      makePrivateDir(dirname(copy));
      createPrivateFile(copy);
      this.writes.flush();
      this.db.exec(`VACUUM INTO '${copy.replace(/'/g, "''")}'`);
      rescued = `Its contents up to now were copied to ${copy}: stop the server and move that file to ${this.file} to go on with them.`;
    } catch (err) {
      rescued = `Copying its contents failed (${(err as Error).message}): stop the server gracefully or not at all until the data is saved (the open file is /proc/${process.pid}/fd/*).`;
    }
    this.orphaned.raise(
      new CoreError(
        'UNAVAILABLE',
        `storage: the database file ${this.file} was ${what} while the server runs; writes would go to a file no path names, lost at the next start. ${rescued}`,
      ),
    );
  }

  onFault(listener: (err: CoreError) => void): void {
    this.orphaned.listen(listener);
  }

  /** True for an error of SQLite's own; one that is not a lock held elsewhere is kept as `failure`. */
  private recordFailure(err: unknown): boolean {
    this.known.clear();
    if (!this.sqlite.isSqliteError(err)) return false;
    if (!this.sqlite.isBusy(err)) this.failure = (err as Error).message;
    return true;
  }

  /** The live row of `key`: what a non-durable transaction left it (SqliteWrites.pending), else SQLite's. */
  private row(key: string, now = Date.now()): Row | undefined {
    const waiting = this.writes.pending.get(key);
    const row = waiting === undefined ? this.stored(key) : waiting === null ? undefined : { key, ...waiting };
    return live(row, now);
  }

  /** SQLite's row of `key` (expired or not; undefined: none), from what this process knows when it can. */
  private stored(key: string): Row | undefined {
    const known = this.known.get(key);
    if (known !== undefined) return known ?? undefined;
    const row = this.st.get.get(key) as Row | undefined;
    this.known.set(key, row ?? null);
    return row;
  }

  /**
   * The live rows of `keys` (undefined: absent or expired): what waits, else what this process
   * knows (KnownRows), else read by one `key IN (…)` statement per MAX_IN keys instead of one
   * statement per key: a metered call's two transactions declare seven keys each, and each
   * statement is a crossing into the binding (bench/sqliteDrivers.mjs).
   */
  private rows(keys: readonly string[], now: number): Map<string, Row | undefined> {
    const rows = new Map<string, Row | undefined>();
    if (keys.length === 1) {
      rows.set(keys[0]!, this.row(keys[0]!, now));
      return rows;
    }
    const pending = this.writes.pending;
    const stored: string[] = [];
    for (const key of keys) {
      const waiting = pending.get(key);
      if (waiting === undefined) {
        const k = this.known.get(key);
        if (k === undefined) stored.push(key);
        rows.set(key, live(k ?? undefined, now));
      } else rows.set(key, waiting ? this.row(key, now) : undefined);
    }
    for (let i = 0; i < stored.length; i += MAX_IN) {
      const chunk = stored.length <= MAX_IN ? stored : stored.slice(i, i + MAX_IN);
      for (const key of chunk) this.known.set(key, null);
      for (const row of this.readIn(chunk.length).all(...chunk) as Row[]) {
        this.known.set(row.key, row);
        if (live(row, now)) rows.set(row.key, row);
      }
    }
    return rows;
  }

  /** `SELECT … WHERE key IN (?, …)` for `n` keys, prepared on first use (at most MAX_IN of them). */
  private readIn(n: number): SqliteStatement {
    let st = this.readsIn[n];
    if (!st) {
      st = this.db.prepare(`SELECT key, value, expires_at, due_at FROM kv WHERE key IN (${'?, '.repeat(n - 1)}?)`);
      this.readsIn[n] = st;
    }
    return st;
  }

  async get<T>(key: string): Promise<T | undefined> {
    return this.run(() => {
      const row = this.row(key);
      return row ? (JSON.parse(row.value) as T) : undefined;
    });
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    return this.run(() => {
      const rows = this.rows(keys, Date.now());
      return keys.map((k) => {
        const row = rows.get(k);
        return row === undefined ? undefined : (JSON.parse(row.value) as T);
      });
    });
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    const json = jsonText(value);
    // Forgotten after the write: the statement first writes what waits, which tells `known` too.
    this.run(() =>
      this.writes.statement(() => {
        this.st.put.run(key, json, expiresAtFor(opts?.ttlMs) ?? null, null);
        this.known.forget(key);
      }),
    );
  }

  async delete(key: string): Promise<boolean> {
    return this.run(() => {
      const existed = this.row(key) !== undefined;
      this.writes.statement(() => {
        this.st.del.run(key);
        this.known.set(key, null);
      });
      return existed;
    });
  }

  /**
   * Values are stored as `JSON.stringify` wrote them (key order as built), so "deep-equal" is
   * decided on the canonical forms of the stored value and of `expected`: the sorting is paid here,
   * on the rare compare-and-set, not on every write of the billing path.
   */
  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    const json = jsonText(value);
    const exp = expected === undefined ? undefined : canonicalJson(expected);
    return this.run(() =>
      this.writes.operation(() => {
        const current = this.row(key)?.value;
        if (current !== exp && (current === undefined || exp === undefined || canonicalJson(JSON.parse(current)) !== exp)) return false;
        this.known.forget(key);
        this.st.put.run(key, json, expiresAtFor(opts?.ttlMs) ?? null, null);
        return true;
      }),
    );
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    return this.run(() =>
      this.writes.operation(() => {
        const row = this.row(key);
        const current = row ? Number(JSON.parse(row.value)) || 0 : 0;
        const next = current + delta;
        if (opts?.min !== undefined && next < opts.min) return null;
        this.known.forget(key);
        if (row) this.st.setValue.run(String(next), key);
        else this.st.put.run(key, String(next), expiresAtFor(opts?.ttlMs) ?? null, null);
        return next;
      }),
    );
  }

  async keys(prefix: string): Promise<string[]> {
    return this.run(() =>
      (this.spilled().st.keys.all(prefix, prefixEnd(prefix), Date.now()) as Array<{ key: string }>)
        .map((r) => r.key)
        .filter((k) => k.startsWith(prefix)),
    );
  }

  async listKeys(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<KeyPage> {
    return this.run(() => {
      const keys = (
        this.spilled().st.listKeys.all(prefix, prefixEnd(prefix), opts.cursor ?? '', Date.now(), opts.limit) as Array<{ key: string }>
      ).map((r) => r.key);
      return { keys: keys.filter((k) => k.startsWith(prefix)), ...(keys.length === opts.limit ? { cursor: keys.at(-1)! } : {}) };
    });
  }

  async append<T>(log: string, record: T): Promise<number> {
    const json = jsonText(record);
    return this.run(() => this.writes.operation(() => this.push(log, json)));
  }

  /**
   * One past the larger of the log's last record and its head (the highest number when it was
   * last trimmed: migration 4). The head is written only when the log starts, not on every append:
   * one b-tree page less in the WAL per transaction and log. The exclusive lock and the one writer
   * make reading the last record then inserting after it safe, and remembering it (logEnds: a
   * trim raises the head to the number remembered, so the next one stays the same).
   */
  private push(log: string, json: string): number {
    let last = this.logEnds.get(log);
    if (last === undefined) {
      const { top, head } = this.st.logEnd.get(log, log) as { top: number | null; head: number | null };
      if (head === null) this.st.startLog.run(log);
      last = Math.max(top ?? 0, head ?? 0);
    }
    const seq = last + 1;
    this.st.appendLog.run(log, seq, json);
    if (this.logEnds.size >= LOG_ENDS_KEPT) this.logEnds.clear();
    this.logEnds.set(log, seq);
    return seq;
  }

  async readLog<T>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]> {
    const limit = opts?.limit ?? -1;
    if (opts?.limit !== undefined && opts.limit <= 0) return [];
    return this.run(() => {
      const rows = (
        opts?.newestFirst
          ? this.st.logDesc.all(log, opts.before ?? Number.MAX_SAFE_INTEGER, limit)
          : this.st.logAsc.all(log, Math.max(0, opts?.after ?? 0), limit)
      ) as Array<{ seq: number; record: string }>;
      return rows.map((r) => ({ seq: r.seq, record: JSON.parse(r.record) as T }));
    });
  }

  async trimLog(log: string, throughSeq: number): Promise<number> {
    return this.run(() =>
      this.writes.operation(() => {
        // The head keeps the numbers going when every record is dropped (appends go on from it).
        this.st.raiseHead.run(log, log);
        return Number(this.st.trimLog.run(log, throughSeq).changes);
      }),
    );
  }

  async listLogs(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<LogPage> {
    return this.run(() => {
      const logs = (this.st.listLogs.all(prefix, prefixEnd(prefix), opts.cursor ?? '', opts.limit) as Array<{ log: string }>).map(
        (r) => r.log,
      );
      return { logs, ...(logs.length === opts.limit ? { cursor: logs.at(-1)! } : {}) };
    });
  }

  /**
   * `durable: false` (TransactOptions): applied at once, committed by the next durable write or
   * within DEFERRED_COMMIT_MS (SqliteWrites): a metered call's hold is committed with its settle.
   * A crash of the process loses what waits, whole.
   */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>, opts?: TransactOptions): Promise<R> {
    return this.run(() => {
      // Read and plan before the write transaction (SqliteWrites: only a write may throw inside
      // it). One synchronous call with one connection: nothing can write in between.
      const now = Date.now();
      const rows = this.rows(keys, now);
      const read: TxRead = <T>(key: string) => {
        if (!rows.has(key)) throw new Error(`transaction read of undeclared key ${key}`);
        const row = rows.get(key);
        return row === undefined ? undefined : (JSON.parse(row.value) as T);
      };
      const { writes, result } = plan(read);
      // Serialised before the write transaction too: a value JSON cannot hold is refused without
      // rolling back what waits.
      const texts = writes.map((w) => (w.op === 'set' ? jsonText(w.value) : w.op === 'append' ? jsonText(w.record) : ''));
      // While writes fail (a full disk), nothing is acknowledged that the next commit may not keep:
      // a hold then fails at once, as the call's start should, instead of being lost at its settle.
      if (opts?.durable === false && this.failure === undefined)
        return this.writes.deferred(() => {
          writes.forEach((w, i) => this.defer(w, texts[i]!, now, rows));
          return result;
        });
      const committed = this.writes.durable(() => {
        writes.forEach((w, i) => this.apply(w, texts[i]!, now, rows));
        return result;
      });
      // A durable write worked: the failure is over once a write larger than any billing
      // transaction commits too (a small write can fit where a larger one does not: writesWork).
      if (this.failure !== undefined) this.writesWork();
      return committed;
    });
  }

  /**
   * One write of a durable transaction. A set that leaves the stored row's expiry and due time as
   * they were (rowAfter) rewrites the value alone, so neither index is touched.
   */
  private apply(w: TxWrite, text: string, now: number, read: Map<string, Row | undefined>): void {
    if (w.op === 'append') return void this.push(w.log, text);
    // A row written here supersedes what waited for it, and SQLite's copy (if any) is older than it.
    const waited = this.writes.pending.delete(w.key);
    if (w.op === 'delete') {
      read.delete(w.key);
      this.st.del.run(w.key);
      return void this.known.set(w.key, null);
    }
    const was = read.get(w.key);
    const row = rowAfter(w, text, now, read);
    if (!waited && was !== undefined && was.expires_at === row.expires_at && was.due_at === row.due_at)
      this.st.setValue.run(row.value, w.key);
    else this.st.put.run(w.key, row.value, row.expires_at, row.due_at);
    this.known.set(w.key, { key: w.key, ...row });
  }

  /** One write of a non-durable transaction: its rows wait in `pending`, its log lines go in now (they need their numbers). */
  private defer(w: TxWrite, text: string, now: number, read: Map<string, Row | undefined>): void {
    if (w.op === 'append') return void this.push(w.log, text);
    this.writes.pending.set(w.key, w.op === 'delete' ? (read.delete(w.key), null) : rowAfter(w, text, now, read));
  }

  /** The store after what waits is written into the open transaction: for a statement over a range of keys. */
  private spilled(): this {
    this.writes.spill();
    return this;
  }

  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    return this.run(() => (this.spilled().st.due.all(now, prefix, prefixEnd(prefix), limit) as Array<{ key: string }>).map((r) => r.key));
  }

  /**
   * Delete rows past their expiry, PURGE_BATCH at a time: each batch is a short write transaction,
   * and the event loop serves requests between batches, so a purge after a long stop (a day of
   * expired claims and rate-limit windows) never holds the one writer for seconds.
   */
  async purgeExpired(now = Date.now()): Promise<number> {
    let deleted = 0;
    for (;;) {
      const batch = this.run(() => this.writes.statement(() => Number(this.st.purge.run(now, PURGE_BATCH, now).changes)));
      // A purge may run with a clock ahead of this one's (a test's, a sweep's `now`): rows it
      // deleted can still be live by Date.now(), so what was known of them goes.
      if (batch > 0) this.known.clear();
      deleted += batch;
      if (batch < PURGE_BATCH) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closed) return { ok: false, detail: 'closed' };
    this.checkFile();
    if (this.orphaned.error) return { ok: false, detail: this.orphaned.error.message };
    try {
      this.st.ping.get();
      if (this.failure !== undefined) {
        const free = this.freeBytes();
        if (free < MIN_FREE_BYTES) return { ok: false, detail: `${this.failure} (${free} bytes free)` };
        const failure = this.failure;
        if (!this.writesWork()) return { ok: false, detail: `${failure} (a test write still fails)` };
      }
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  }

  /**
   * After a failed write: whether writes work again, shown by a durable write of PROBE_BYTES (then
   * deleted), which clears the failure. A one-page write (a committed write that changes nothing
   * was the test) can fit in the slack of the WAL file's last block, or under a file size limit,
   * while every billing transaction still fails: health said ok and the store took holds it then
   * could not commit.
   */
  private writesWork(): boolean {
    if (this.freeBytes() < MIN_FREE_BYTES) return false;
    try {
      this.writes.durable(() => this.st.put.run(PROBE_KEY, 'x'.repeat(PROBE_BYTES), null, null));
      this.writes.durable(() => this.st.del.run(PROBE_KEY));
    } catch (err) {
      this.recordFailure(err);
      return false;
    }
    this.failure = undefined;
    return true;
  }

  /** Free bytes of the filesystem the database file is on (0 when it cannot be read). */
  private freeBytes(): number {
    try {
      const { bavail, bsize } = statfsSync(dirname(this.file));
      return bavail * bsize;
    } catch {
      return 0;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.checkFile(); // a graceful stop after the file was deleted still saves what it holds
    this.closed = true;
    clearInterval(this.purger);
    clearInterval(this.fileCheck);
    try {
      // What waits for a commit is written before the file closes (a stop is not a crash).
      this.writes.flush();
    } catch {
      // The file refused the commit (a full disk): what waited was non-durable, and is lost as a
      // crash would lose it. A stop goes on; the failure was the store's, not the caller's.
    } finally {
      this.db.close();
    }
  }
}

/** `row` if it is live at `now` (no expiry, or one still ahead), else undefined. */
function live(row: Row | undefined, now: number): Row | undefined {
  return row && (row.expires_at === null || row.expires_at > now) ? row : undefined;
}

/**
 * The row a set leaves (TxWrite 'set'). It keeps the row's expiry when it would move by less than
 * keepsExpiry allows (as PostgreSQL's aib_tx, migration 5), so a day row rewritten by every call
 * does not move its expiry index entry each time (a page of the WAL). A key written once in the
 * transaction no longer has the row read: a later write of it takes its own expiry.
 */
function rowAfter(w: Extract<TxWrite, { op: 'set' }>, text: string, now: number, read: Map<string, Row | undefined>): PendingRow {
  const was = read.get(w.key);
  read.delete(w.key);
  const expiresAt = expiresAtFor(w.ttlMs, now) ?? null;
  const keep = was !== undefined && keepsExpiry(was.expires_at, expiresAt, w.ttlMs);
  return { value: text, expires_at: keep ? was.expires_at : expiresAt, due_at: w.dueAt ?? null };
}

function prepare(db: SqliteDatabase) {
  const p = (sql: string) => db.prepare(sql);
  return {
    ping: p('SELECT 1'),
    get: p('SELECT key, value, expires_at, due_at FROM kv WHERE key = ?'),
    put: p(
      'INSERT INTO kv (key, value, expires_at, due_at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = excluded.due_at',
    ),
    setValue: p('UPDATE kv SET value = ? WHERE key = ?'),
    del: p('DELETE FROM kv WHERE key = ?'),
    keys: p('SELECT key FROM kv WHERE key >= ? AND key < ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key'),
    due: p('SELECT key FROM kv WHERE due_at IS NOT NULL AND due_at <= ? AND key >= ? AND key < ? ORDER BY due_at LIMIT ?'),
    purge: p(
      'DELETE FROM kv WHERE key IN (SELECT key FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?) AND expires_at <= ?',
    ),
    logEnd: p('SELECT (SELECT max(seq) FROM logs WHERE log = ?) AS top, (SELECT last_seq FROM log_heads WHERE log = ?) AS head'),
    startLog: p('INSERT INTO log_heads (log, last_seq) VALUES (?, 0)'),
    raiseHead: p('UPDATE log_heads SET last_seq = max(last_seq, coalesce((SELECT max(seq) FROM logs WHERE log = ?), 0)) WHERE log = ?'),
    appendLog: p('INSERT INTO logs (log, seq, record) VALUES (?, ?, ?)'),
    logAsc: p('SELECT seq, record FROM logs WHERE log = ? AND seq > ? ORDER BY seq LIMIT ?'),
    logDesc: p('SELECT seq, record FROM logs WHERE log = ? AND seq < ? ORDER BY seq DESC LIMIT ?'),
    trimLog: p('DELETE FROM logs WHERE log = ? AND seq <= ?'),
    listLogs: p('SELECT log FROM log_heads WHERE log >= ? AND log < ? AND log > ? ORDER BY log LIMIT ?'),
    listKeys: p(
      'SELECT key FROM kv WHERE key >= ? AND key < ? AND key > ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key LIMIT ?',
    ),
  };
}

/** Apply the migrations this file has not seen yet, each in its own transaction. */
function migrate(db: SqliteDatabase, file: string): void {
  db.exec(MIGRATIONS_TABLE);
  const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
  refuseNewerSchema(applied, `the database file ${file}`);
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.immediate(() => {
      db.exec(m.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
    });
  }
}
