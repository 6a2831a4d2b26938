import { isDeepStrictEqual } from 'node:util';
import type { IncrementOptions, LogEntry, SetOptions, Storage } from './Storage.js';

interface Slot {
  value: unknown;
  expiresAt: number | undefined;
}

/** In-process storage for tests and throwaway development. Everything is lost on exit. */
export class MemoryStorage implements Storage {
  readonly kind = 'memory' as const;
  private readonly data = new Map<string, Slot>();
  private readonly logs = new Map<string, unknown[]>();

  private live(key: string): Slot | undefined {
    const slot = this.data.get(key);
    if (slot?.expiresAt !== undefined && slot.expiresAt <= Date.now()) {
      this.data.delete(key);
      return undefined;
    }
    return slot;
  }

  private put(key: string, value: unknown, opts?: SetOptions): void {
    // structuredClone keeps callers from mutating stored state through a shared reference.
    this.data.set(key, { value: structuredClone(value), expiresAt: opts?.ttlMs ? Date.now() + opts.ttlMs : undefined });
  }

  async get<T>(key: string): Promise<T | undefined> {
    const slot = this.live(key);
    return slot === undefined ? undefined : (structuredClone(slot.value) as T);
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.put(key, value, opts);
  }

  async delete(key: string): Promise<boolean> {
    const existed = this.live(key) !== undefined;
    this.data.delete(key);
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

  async append<T>(log: string, record: T): Promise<number> {
    let entries = this.logs.get(log);
    if (!entries) this.logs.set(log, (entries = []));
    entries.push(structuredClone(record));
    return entries.length;
  }

  async readLog<T>(log: string, opts?: { after?: number; limit?: number }): Promise<LogEntry<T>[]> {
    const entries = this.logs.get(log) ?? [];
    const start = opts?.after ?? 0;
    const end = opts?.limit === undefined ? entries.length : Math.min(entries.length, start + opts.limit);
    const out: LogEntry<T>[] = [];
    for (let i = start; i < end; i++) out.push({ seq: i + 1, record: structuredClone(entries[i]) as T });
    return out;
  }

  async health() {
    return { ok: true };
  }

  async close(): Promise<void> {}
}
