import type { CoreError } from './CoreError.js';

/**
 * The one storage interface every stateful service uses (workspaces added at run time,
 * client workspaces, OAuth sessions, BYOK keys, balances, ledgers, rate-limit counters).
 *
 * Keys are plain strings; services namespace them (`ws:`, `oauth:`, `keys:`, `ledger:`...).
 * Values are JSON-serialisable. Every method may throw `CoreError('UNAVAILABLE')` when the
 * backend cannot be reached (e.g. Redis down): callers fail fast, the server keeps serving.
 */
export interface Storage {
  readonly kind: 'memory' | 'sqlite' | 'postgres' | 'redis';
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Set a value; `ttlMs` makes it expire. */
  set<T>(key: string, value: T, opts?: SetOptions): Promise<void>;
  /** Delete a key; true when it existed. */
  delete(key: string): Promise<boolean>;
  /**
   * Atomically replace the value only when the current value deep-equals `expected`
   * (`undefined` means "absent", so this doubles as set-if-absent). True when it was written.
   */
  compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean>;
  /**
   * Atomically add `delta` to an integer counter (absent counts as 0) and return the new value.
   * With `min`, an update that would leave the counter below `min` is not applied and `null`
   * is returned (used to reserve tokens without ever going below zero).
   * `ttlMs` applies when the counter is created (rate-limit windows).
   */
  increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null>;
  /** Keys starting with `prefix` (not expired). For listings of a bounded set, not hot paths. */
  keys(prefix: string): Promise<string[]>;
  /**
   * Keys starting with `prefix` (not expired), at most `limit` a page (pass the returned `cursor`
   * back for the next page; none on the last): for walks over a set that grows with use (every
   * user's vault entry, every statistics record). As `listLogs`: an index range on SQL, a SCAN
   * cursor on Redis, where a page may repeat a key already seen or hold fewer than `limit` (an
   * owner's keys, kernel/ownerListings.ts, page through that owner's index there once it is built: never more than
   * `limit`, never a repeat).
   */
  listKeys(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<KeyPage>;
  /**
   * Append a record to a named append-only log and return its sequence number (1-based,
   * increasing per log). An acknowledged append is durable for the file and redis backends.
   */
  append<T>(log: string, record: T): Promise<number>;
  /**
   * Read log records. Oldest first by default (`after` skips sequence numbers up to and including
   * it); with `newestFirst`, newest first from just below `before` (a paging cursor: pass the
   * last seq you got). Backed by an index: the cost does not grow with the log's length.
   */
  readLog<T = unknown>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]>;
  /**
   * Drop a log's records up to and including `throughSeq` (retention, after they were exported).
   * The records after it keep their sequence numbers, reads skip the dropped ones and appends go
   * on from the head. Returns how many it dropped. The caller bounds `throughSeq` to a batch past
   * the oldest record, so one call is one short write.
   */
  trimLog(log: string, throughSeq: number): Promise<number>;
  /**
   * Names of the logs starting with `prefix`, at most `limit` a page (pass the returned `cursor`
   * back for the next page; none on the last). Backed by an index or a cursor scan: the cost of a
   * page does not grow with the number of logs. A page may repeat a name already seen (Redis).
   */
  listLogs(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<LogPage>;
  /** Several values in one round trip (absent keys are undefined). */
  getMany<T = unknown>(keys: readonly string[]): Promise<Array<T | undefined>>;
  /**
   * One transaction: read `keys`, let `plan` decide, apply the writes it returns, all or nothing,
   * isolated from other transactions on the same keys. `plan` must be pure and synchronous: an
   * optimistic backend may run it again after a conflict. An error thrown by `plan` aborts the
   * transaction (nothing is written) and is rethrown.
   */
  transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>, opts?: TransactOptions): Promise<R>;
  /** Keys under `prefix` whose `dueAt` (set in a transaction) is at or before `now`, oldest due first. */
  dueKeys(prefix: string, now: number, limit: number): Promise<string[]>;
  /** Reachability of the backend, for /health and admin.healthCheck. */
  health(): Promise<{ ok: boolean; detail?: string }>;
  /**
   * What the operator should fix in the backend's own settings for the store to stay fast as it
   * grows, read once at start and logged as warnings (PostgreSQL: autovacuum off for the server or
   * the store's tables). Backends with nothing to check leave it out.
   */
  maintenanceWarnings?(): Promise<Array<{ message: string; fix: string }>>;
  /**
   * `listener` is called once if the store stops serving for good: its data was lost or replaced
   * under the running server (Redis restarted empty, a PostgreSQL schema dropped, SQLite's file
   * deleted) or a newer release writes to it. Every call refuses with that error (503) from then
   * on; the runtime logs it. Backends without such a state leave it out.
   */
  onFault?(listener: (err: CoreError) => void): void;
  /** Release resources (file locks, connections). Idempotent. */
  close(): Promise<void>;
}

export interface SetOptions {
  /** Time to live in milliseconds. Default: no expiry. */
  ttlMs?: number;
}

export interface TransactOptions {
  /**
   * true (default): the transaction is acknowledged once it is durable, as every other write.
   * false: the store may acknowledge before the write is durable; a crash can lose it (whole,
   * never in part). Only for writes whose loss the caller makes good itself or that move no money:
   * a call's hold, whose settle charges the whole call when it finds no hold
   * (services/billing/Reservations.ts), and a BYOK call's usage record (recordByokUsage.ts).
   * PostgreSQL commits such a transaction with `synchronous_commit = off`, SQLite with the next
   * durable write (sql/SqliteWrites.ts); a store that cannot weaken one transaction's durability
   * ignores it (it says why in its `transact`).
   */
  durable?: boolean;
}

export interface IncrementOptions extends SetOptions {
  /** Lower bound the counter may not cross; the update is refused (returns null) instead. */
  min?: number;
}

export interface LogEntry<T> {
  seq: number;
  record: T;
}

export interface LogPage {
  logs: string[];
  cursor?: string;
}

export interface KeyPage {
  keys: string[];
  cursor?: string;
}

export interface ReadLogOptions {
  after?: number;
  limit?: number;
  /** Newest first, starting below `before` (default: from the newest). */
  newestFirst?: boolean;
  before?: number;
}

/** The values a transaction read, by key (only the keys it declared). */
export type TxRead = <T = unknown>(key: string) => T | undefined;

export type TxWrite =
  /**
   * `dueAt` (ms) lists the key in `dueKeys` from then on; a later set without it unlists it.
   * `ttlMs` of an hour or more rewriting a live row: the store may keep the row's expiry when the
   * new one is within ttlMs/256 of it, so the row's expiry may be up to that much before or after
   * now + ttlMs (keepsExpiry). For garbage collection (day rows, spend windows), not for leases.
   */
  | { op: 'set'; key: string; value: unknown; ttlMs?: number; dueAt?: number }
  | { op: 'delete'; key: string }
  | { op: 'append'; log: string; record: unknown };

export interface TxPlan<R> {
  writes: TxWrite[];
  result: R;
}
