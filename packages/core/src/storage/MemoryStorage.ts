import { isDeepStrictEqual } from 'node:util';
import type {
  IncrementOptions,
  KeyPage,
  LogEntry,
  LogPage,
  ReadLogOptions,
  SetOptions,
  Storage,
  TxPlan,
  TxRead,
} from '../kernel/Storage.js';
import { sliceLog } from './sliceLog.js';

/** Fewest writes with a ttl between two sweeps of expired slots. */
const MIN_SWEEP = 1024;

interface Slot {
  value: unknown;
  expiresAt: number | undefined;
}

/**
 * In-process storage for tests and embedding. Everything is lost on exit. Transactions have the
 * same semantics as the SQL stores: a plan runs synchronously, so nothing can interleave with it.
 */
export class MemoryStorage implements Storage {
  readonly kind = 'memory' as const;
  private readonly data = new Map<string, Slot>();
  private readonly logs = new Map<string, unknown[]>();
  /** Per log, the sequence number up to which trimLog dropped its records. */
  private readonly trimmed = new Map<string, number>();
  /** Keys listed for dueKeys, with their due time. */
  private readonly due = new Map<string, number>();
  /**
   * Expired slots are dropped when read, and by a sweep of the whole map once as many writes with
   * a ttl came as slots were left by the last one (at least MIN_SWEEP): amortized a step per
   * write and no timer, and the map holds at most about twice its live slots. Without it every
   * key written once with a ttl and never read again (a rate-limit window per caller and minute,
   * a cached answer, an OAuth code) stayed for the life of the process.
   */
  private ttlWrites = 0;
  private sweepAfter = MIN_SWEEP;

  /** Slots held, expired ones not yet swept included (for tests and sizing). */
  get size(): number {
    return this.data.size;
  }

  private live(key: string): Slot | undefined {
    const slot = this.data.get(key);
    if (slot?.expiresAt !== undefined && slot.expiresAt <= Date.now()) {
      this.data.delete(key);
      this.due.delete(key);
      return undefined;
    }
    return slot;
  }

  private put(key: string, value: unknown, opts?: SetOptions): void {
    // The copy keeps callers from mutating stored state through a shared reference.
    this.data.set(key, { value: copyValue(value), expiresAt: opts?.ttlMs ? Date.now() + opts.ttlMs : undefined });
    this.due.delete(key);
    if (opts?.ttlMs && ++this.ttlWrites >= this.sweepAfter) this.sweep();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, slot] of this.data) {
      if (slot.expiresAt !== undefined && slot.expiresAt <= now) {
        this.data.delete(key);
        this.due.delete(key);
      }
    }
    this.ttlWrites = 0;
    this.sweepAfter = Math.max(MIN_SWEEP, this.data.size);
  }

  async get<T>(key: string): Promise<T | undefined> {
    const slot = this.live(key);
    return slot === undefined ? undefined : (copyValue(slot.value) as T);
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    return keys.map((k) => {
      const slot = this.live(k);
      return slot === undefined ? undefined : (copyValue(slot.value) as T);
    });
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.put(key, value, opts);
  }

  async delete(key: string): Promise<boolean> {
    const existed = this.live(key) !== undefined;
    this.data.delete(key);
    this.due.delete(key);
    return existed;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    const current = this.live(key)?.value;
    if (!isDeepStrictEqual(current, expected)) return false;
    this.put(key, value, opts);
    return true;
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    const slot = this.live(key);
    const current = typeof slot?.value === 'number' ? slot.value : 0;
    const next = current + delta;
    if (opts?.min !== undefined && next < opts.min) return null;
    if (slot) slot.value = next;
    else this.put(key, next, opts);
    return next;
  }

  async keys(prefix: string): Promise<string[]> {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix) && this.live(k) !== undefined);
  }

  async listKeys(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<KeyPage> {
    const after = opts.cursor ?? '';
    const keys = [...this.data.keys()]
      .filter((k) => k.startsWith(prefix) && k > after && this.live(k) !== undefined)
      .sort()
      .slice(0, opts.limit);
    return { keys, ...(keys.length === opts.limit ? { cursor: keys.at(-1)! } : {}) };
  }

  async append<T>(log: string, record: T): Promise<number> {
    return this.push(log, record);
  }

  private push(log: string, record: unknown): number {
    let entries = this.logs.get(log);
    if (!entries) this.logs.set(log, (entries = []));
    entries.push(copyValue(record));
    return entries.length;
  }

  async readLog<T>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]> {
    const entries = this.logs.get(log) ?? [];
    // Records up to `trimmed` were dropped: reads start past them, as an index range would.
    const trimmed = this.trimmed.get(log) ?? 0;
    const from = opts?.newestFirst ? opts : { ...opts, after: Math.max(trimmed, opts?.after ?? 0) };
    return sliceLog(entries.length, from)
      .filter((seq) => seq > trimmed)
      .map((seq) => ({ seq, record: copyValue(entries[seq - 1]) as T }));
  }

  async trimLog(log: string, throughSeq: number): Promise<number> {
    const entries = this.logs.get(log);
    const trimmed = this.trimmed.get(log) ?? 0;
    const through = Math.min(throughSeq, entries?.length ?? 0);
    if (!entries || through <= trimmed) return 0;
    entries.fill(undefined, trimmed, through);
    this.trimmed.set(log, through);
    return through - trimmed;
  }

  async listLogs(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<LogPage> {
    const after = opts.cursor ?? '';
    const logs = [...this.logs.keys()]
      .filter((l) => l.startsWith(prefix) && l > after)
      .sort()
      .slice(0, opts.limit);
    return { logs, ...(logs.length === opts.limit ? { cursor: logs.at(-1)! } : {}) };
  }

  /** `durable: false` (TransactOptions) changes nothing here: nothing this store holds outlives its process. */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    const snapshot = new Map(keys.map((k) => [k, this.live(k)?.value]));
    const read: TxRead = <T>(key: string) => {
      if (!snapshot.has(key)) throw new Error(`transaction read of undeclared key ${key}`);
      const v = snapshot.get(key);
      return (v === undefined ? undefined : copyValue(v)) as T | undefined;
    };
    const { writes, result } = plan(read);
    for (const w of writes) {
      if (w.op === 'set') {
        this.put(w.key, w.value, w.ttlMs ? { ttlMs: w.ttlMs } : undefined);
        if (w.dueAt !== undefined) this.due.set(w.key, w.dueAt);
      } else if (w.op === 'delete') {
        this.data.delete(w.key);
        this.due.delete(w.key);
      } else {
        this.push(w.log, w.record);
      }
    }
    return result;
  }

  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    return [...this.due.entries()]
      .filter(([k, at]) => at <= now && k.startsWith(prefix) && this.live(k) !== undefined)
      .sort((a, b) => a[1] - b[1])
      .slice(0, limit)
      .map(([k]) => k);
  }

  async health() {
    return { ok: true };
  }

  async close(): Promise<void> {}
}

/**
 * A deep copy of a stored value, as `structuredClone` makes it, for the memory store's reads and
 * writes. Stored values are JSON-like (plain objects, arrays, primitives): those are copied here
 * directly, several times faster than `structuredClone`'s serialize-and-deserialize round (a
 * metered call copies its day and statistics rows a few times). Anything else (a Date, a Map, a
 * typed array, a function that must fail to store) goes through `structuredClone` itself.
 */
export function copyValue<T>(value: T): T {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'function' || typeof value === 'symbol' ? structuredClone(value) : value;
  }
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyValue(value[i]);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const copied = copyValue((value as Record<string, unknown>)[key]);
    // An own "__proto__" key (JSON.parse makes one from caller input) stays a key, as structuredClone
    // keeps it: assigning it would set the copy's prototype instead.
    if (key === '__proto__') Object.defineProperty(out, key, { value: copied, enumerable: true, writable: true, configurable: true });
    else out[key] = copied;
  }
  return out as T;
}
