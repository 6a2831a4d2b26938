import { randomUUID } from 'node:crypto';
import type { Storage } from '../kernel/Storage.js';
import type { TransportName } from '../kernel/identity.js';
import type { Signals } from '../kernel/Signals.js';

/** Latency bucket upper bounds in ms (the last bucket is everything above). Shared by every instance. */
export const LATENCY_BOUNDS_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000] as const;
const DAY_MS = 86_400_000;
const PREFIX = 'stats:';
/** Asks every instance to write its pending counts now; each answers on FLUSHED with the request's id. */
const FLUSH = 'stats.flush';
const FLUSHED = 'stats.flushed';
/**
 * Reading the statistics is not counted in them: a dashboard polling admin.statistics would
 * otherwise fill them with its own reads, and two reads in a row (on one instance or two) would
 * never agree.
 */
const UNCOUNTED = new Set(['admin.statistics']);

/** One (day, entry point, procedure) record, as stored. */
interface DayRecord {
  count: number;
  errors: number;
  totalMs: number;
  /** Counts per latency bucket (LATENCY_BOUNDS_MS plus one overflow bucket). */
  buckets: number[];
}

export interface StatsOptions {
  /** How often pending counts are added to the store. Default 5000 ms. */
  flushIntervalMs?: number;
  /** Days a record is kept (its ttl). Default 90. */
  retentionDays?: number;
  /** How long a read waits for the other instances to write their pending counts. Default 1000 ms. */
  peerFlushTimeoutMs?: number;
  /** Cross-instance signals: with Redis, a read first has every instance write its pending counts. */
  signals?: Signals;
  /** Clock, for tests. */
  now?: () => number;
}

export interface ProcedureStatistics {
  transport: string;
  path: string;
  count: number;
  errors: number;
  avgMs: number;
  /** Upper bound of the latency bucket holding the percentile (null above the last bound). */
  latencyMs: { p50: number | null; p90: number | null; p99: number | null };
}

export interface StatisticsSnapshot {
  days: number;
  /** First UTC day included (YYYY-MM-DD). */
  since: string;
  total: number;
  errors: number;
  procedures: ProcedureStatistics[];
  byDay: Array<{ day: string; total: number; errors: number }>;
  /** Per day and entry point (trpc, rpc, mcp, openai, internal), days ascending. */
  byDayEntry: Array<{ day: string; transport: string; total: number; errors: number }>;
}

const emptyRecord = (): DayRecord => ({ count: 0, errors: 0, totalMs: 0, buckets: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0) });
const dayString = (dayNumber: number) => new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);

function bucketOf(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i;
  return LATENCY_BOUNDS_MS.length;
}

function merge(into: DayRecord, add: DayRecord): DayRecord {
  into.count += add.count;
  into.errors += add.errors;
  into.totalMs += add.totalMs;
  for (let i = 0; i < into.buckets.length; i++) into.buckets[i] = (into.buckets[i] ?? 0) + (add.buckets[i] ?? 0);
  return into;
}

function percentile(buckets: number[], count: number, p: number): number | null {
  if (count === 0) return null;
  const rank = Math.ceil((p / 100) * count);
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i]!;
    if (seen >= rank) return LATENCY_BOUNDS_MS[i] ?? null;
  }
  return null;
}

/**
 * Request statistics per UTC day, entry point and procedure, kept in the store so they survive
 * restarts and every instance reads the same figures (admin.statistics). Calls are counted in
 * memory and added to the store every `flushIntervalMs` (and before every read on this instance),
 * so the hot path never waits for storage. Records merge with compare-and-set: instances
 * flushing at the same moment never lose each other's counts. Latency is kept as bucket counts,
 * which merge across instances; percentiles are bucket upper bounds.
 */
export class Stats {
  private pending = new Map<string, DayRecord>();
  private day = -1;
  private dayKey = '';
  private timer: ReturnType<typeof setInterval> | undefined;
  private flushing: Promise<void> | undefined;
  /** The flush that follows the one under way (asked for while it was writing). */
  private flushAgain: Promise<void> | undefined;
  private readonly now: () => number;
  /** Ids of this instance's own flush requests (Redis echoes them back through the local dispatch). */
  private readonly asking = new Set<string>();
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly storage?: Storage,
    private readonly opts: StatsOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
  }

  record(transport: TransportName, path: string, ms: number, failed: boolean): void {
    if (UNCOUNTED.has(path)) return;
    const day = Math.floor(this.now() / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.dayKey = dayString(day);
    }
    const key = `${this.dayKey}:${transport}:${path}`;
    let r = this.pending.get(key);
    if (!r) this.pending.set(key, (r = emptyRecord()));
    r.count++;
    if (failed) r.errors++;
    r.totalMs += ms;
    r.buckets[bucketOf(ms)]!++;
  }

  start(): void {
    if (!this.storage || this.timer) return;
    this.timer = setInterval(() => void this.flush().catch(() => undefined), this.opts.flushIntervalMs ?? 5000);
    this.timer.unref();
    const signals = this.opts.signals;
    if (signals?.kind === 'redis') {
      // Another instance is about to read: write what is pending here, then say so (even after a
      // failed write, so the reader does not wait out its timeout for nothing).
      this.unsubscribe.push(
        signals.subscribe(FLUSH, (id) => {
          if (this.asking.has(id)) return;
          void this.flush()
            .catch(() => undefined)
            .then(() => signals.publish(FLUSHED, id));
        }),
      );
    }
  }

  /** Stop the timer and write what is pending. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const off of this.unsubscribe.splice(0)) off();
    await this.flush().catch(() => undefined);
  }

  /**
   * Write this instance's pending counts and have every other instance on the same Redis write
   * theirs, waiting at most `peerFlushTimeoutMs` for their answers: a read right after calls
   * served by other instances sees them, and every instance answers the same figures.
   */
  private async flushEverywhere(): Promise<void> {
    const signals = this.opts.signals;
    if (signals?.kind !== 'redis') return this.flush();
    const id = randomUUID();
    this.asking.add(id);
    let answered = 0;
    let expected = Number.POSITIVE_INFINITY;
    let wake = () => undefined as void;
    const all = new Promise<void>((resolve) => (wake = resolve));
    const off = signals.subscribe(FLUSHED, (m) => {
      if (m === id && ++answered >= expected) wake();
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const [reached] = await Promise.all([signals.publish(FLUSH, id), this.flush()]);
      expected = reached;
      if (answered >= expected) return;
      await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, this.opts.peerFlushTimeoutMs ?? 1000)))]);
    } finally {
      clearTimeout(timer);
      off();
      this.asking.delete(id);
    }
  }

  /**
   * Add the counts pending now to the store (one write at a time; a failed one keeps its counts
   * for the next). A write under way took its batch when it began, so a flush asked for meanwhile
   * (a read here or on another instance) waits for it and then writes what came in since: every
   * call counted before the flush was asked for is in the store when it resolves.
   */
  flush(): Promise<void> {
    if (!this.storage) return Promise.resolve();
    if (this.flushing) {
      this.flushAgain ??= this.flushing
        .catch(() => undefined)
        .then(() => {
          this.flushAgain = undefined;
          return this.flush();
        });
      return this.flushAgain;
    }
    this.flushing = this.writePending().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    const storage = this.storage!;
    const batch = this.pending;
    this.pending = new Map();
    const ttlMs = (this.opts.retentionDays ?? 90) * DAY_MS;
    for (const [key, add] of batch) {
      try {
        // One transaction: the store's own atomic primitive (queued per key in this process,
        // locked across instances), so instances flushing the same row never lose a race.
        await storage.transact([PREFIX + key], (read) => {
          const current = read<DayRecord>(PREFIX + key);
          return { writes: [{ op: 'set', key: PREFIX + key, value: merge(current ? structuredClone(current) : emptyRecord(), add), ttlMs }], result: null };
        });
      } catch (err) {
        // Keep the counts for the next flush instead of losing them.
        const back = this.pending.get(key);
        this.pending.set(key, back ? merge(back, add) : add);
        throw err;
      }
    }
  }

  /** The last `days` UTC days (today included), from the store: the same on every instance. */
  async snapshot(days = 7): Promise<StatisticsSnapshot> {
    await this.flushEverywhere();
    const today = Math.floor(this.now() / DAY_MS);
    const wanted = new Set(Array.from({ length: days }, (_, i) => dayString(today - i)));
    const entries: Array<[string, DayRecord]> = [];
    if (this.storage) {
      const keys = (await this.storage.keys(PREFIX)).filter((k) => wanted.has(k.slice(PREFIX.length, PREFIX.length + 10)));
      const values = await Promise.all(keys.map((k) => this.storage!.get<DayRecord>(k)));
      keys.forEach((k, i) => values[i] && entries.push([k.slice(PREFIX.length), values[i]!]));
    } else {
      for (const [k, r] of this.pending) if (wanted.has(k.slice(0, 10))) entries.push([k, r]);
    }
    const byProcedure = new Map<string, DayRecord>();
    const byDay = new Map<string, { total: number; errors: number }>();
    const byDayEntry = new Map<string, { day: string; transport: string; total: number; errors: number }>();
    for (const [key, r] of entries) {
      const day = key.slice(0, 10);
      const rest = key.slice(11);
      const p = byProcedure.get(rest) ?? emptyRecord();
      byProcedure.set(rest, merge(p, r));
      const d = byDay.get(day) ?? { total: 0, errors: 0 };
      d.total += r.count;
      d.errors += r.errors;
      byDay.set(day, d);
      const transport = rest.slice(0, rest.indexOf(':'));
      const de = byDayEntry.get(`${day} ${transport}`) ?? { day, transport, total: 0, errors: 0 };
      de.total += r.count;
      de.errors += r.errors;
      byDayEntry.set(`${day} ${transport}`, de);
    }
    const procedures = [...byProcedure]
      .map(([key, r]) => {
        const sep = key.indexOf(':');
        return {
          transport: key.slice(0, sep),
          path: key.slice(sep + 1),
          count: r.count,
          errors: r.errors,
          avgMs: r.count ? Number((r.totalMs / r.count).toFixed(3)) : 0,
          latencyMs: { p50: percentile(r.buckets, r.count, 50), p90: percentile(r.buckets, r.count, 90), p99: percentile(r.buckets, r.count, 99) },
        };
      })
      .sort((a, b) => b.count - a.count || a.path.localeCompare(b.path));
    return {
      days,
      since: dayString(today - days + 1),
      total: procedures.reduce((s, p) => s + p.count, 0),
      errors: procedures.reduce((s, p) => s + p.errors, 0),
      procedures,
      byDay: [...byDay].map(([day, v]) => ({ day, ...v })).sort((a, b) => a.day.localeCompare(b.day)),
      byDayEntry: [...byDayEntry.values()].sort((a, b) => a.day.localeCompare(b.day) || a.transport.localeCompare(b.transport)),
    };
  }

  /**
   * Forget this instance's counts not yet written (another instance cleared the statistics: what
   * was counted here before the clear must not reappear at the next flush).
   */
  dropPending(): void {
    this.pending.clear();
  }

  /** Forget everything: pending counts and, cluster-wide, the stored records. */
  async reset(): Promise<void> {
    this.pending.clear();
    if (!this.storage) return;
    await this.flushing?.catch(() => undefined);
    const keys = await this.storage.keys(PREFIX);
    await Promise.all(keys.map((k) => this.storage!.delete(k)));
  }
}
