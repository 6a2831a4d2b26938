/**
 * The one storage interface every stateful service uses (workspaces added at run time,
 * client workspaces, OAuth sessions, BYOK keys, balances, ledgers, rate-limit counters).
 *
 * Keys are plain strings; services namespace them (`ws:`, `oauth:`, `keys:`, `ledger:`...).
 * Values are JSON-serialisable. Every method may throw `CoreError('UNAVAILABLE')` when the
 * backend cannot be reached (e.g. Redis down): callers fail fast, the server keeps serving.
 */
export interface Storage {
  readonly kind: 'memory' | 'file' | 'redis';
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
  /** Keys starting with `prefix` (not expired). For listings, not hot paths. */
  keys(prefix: string): Promise<string[]>;
  /**
   * Append a record to a named append-only log and return its sequence number (1-based,
   * increasing per log). An acknowledged append is durable for the file and redis backends.
   */
  append<T>(log: string, record: T): Promise<number>;
  /** Read log records in order; `after` skips sequence numbers up to and including it. */
  readLog<T = unknown>(log: string, opts?: { after?: number; limit?: number }): Promise<LogEntry<T>[]>;
  /** Reachability of the backend, for /health and admin.healthCheck. */
  health(): Promise<{ ok: boolean; detail?: string }>;
  /** Release resources (file locks, connections). Idempotent. */
  close(): Promise<void>;
}

export interface SetOptions {
  /** Time to live in milliseconds. Default: no expiry. */
  ttlMs?: number;
}

export interface IncrementOptions extends SetOptions {
  /** Lower bound the counter may not cross; the update is refused (returns null) instead. */
  min?: number;
}

export interface LogEntry<T> {
  seq: number;
  record: T;
}
