import { randomUUID } from 'node:crypto';
import type { Storage, TxWrite } from '../kernel/Storage.js';
import { FAMILY_LISTED } from '../kernel/ownerListings.js';
import type { TransportName } from '../kernel/identity.js';
import type { Signals } from '../kernel/Signals.js';
import type { UpstreamDay, UpstreamStats } from '../observability/UpstreamStats.js';
import { emptyRecord, LATENCY_BOUNDS_MS, merge, summarize, type DayRecord, type StatisticsSnapshot } from './dayRecords.js';
import { StatsIndex } from './StatsIndex.js';

export { LATENCY_BOUNDS_MS, type ProcedureStatistics, type StatisticsSnapshot } from './dayRecords.js';

const DAY_MS = 86_400_000;

/** The latency bucket of a call that took `ms` (the last one: over every bound). */
function bucketOf(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i;
  return LATENCY_BOUNDS_MS.length;
}
const PREFIX = FAMILY_LISTED.stats;
/** Keys deleted per page by reset(). */
const RESET_PAGE = 500;
const dayString = (dayNumber: number) => new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
/** Asks every instance to write its pending counts now; each answers on FLUSHED with the request's id. */
const FLUSH = 'stats.flush';
const FLUSHED = 'stats.flushed';
/**
 * Reading the statistics is not counted in them: a dashboard polling admin.statistics would
 * otherwise fill them with its own reads, and two reads in a row (on one instance or two) would
 * never agree.
 */
const UNCOUNTED = new Set(['admin.statistics']);

export interface StatsOptions {
  /** How often pending counts are added to the store. Default 5000 ms. */
  flushIntervalMs?: number;
  /** Days a record is kept (its ttl). Default 90. */
  retentionDays?: number;
  /** How long a read waits for the other instances to write their pending counts. Default 1000 ms. */
  peerFlushTimeoutMs?: number;
  /** Cross-instance signals: with Redis, a read first has every instance write its pending counts. */
  signals?: Signals;
  /** Calls to model providers per day, provider and model: written with every flush, read by upstreamDays. */
  upstream?: UpstreamStats;
  /** Clock, for tests. */
  now?: () => number;
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
  /** Which records exist per day, so a read never lists keys (StatsIndex). */
  private readonly index: StatsIndex | undefined;

  constructor(
    private readonly storage?: Storage,
    private readonly opts: StatsOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.index = storage ? new StatsIndex(storage, this.now) : undefined;
  }

  /** One call; `cached` when the response cache answered it, with the tokens its answer had used. */
  record(transport: TransportName, path: string, ms: number, failed: boolean, cached?: { tokens: number }): void {
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
    if (cached) {
      r.cacheHits = (r.cacheHits ?? 0) + 1;
      r.cachedTokens = (r.cachedTokens ?? 0) + cached.tokens;
    }
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
    // Nothing counted since the last write: an idle server does not touch the store every tick.
    if (this.pending.size === 0 && !this.opts.upstream?.hasPending) return;
    const storage = this.storage!;
    const batch = this.pending;
    this.pending = new Map();
    const ttlMs = (this.opts.retentionDays ?? 90) * DAY_MS;
    // Its failure is caught at once: during a store outage it can fail while the records below are
    // still being written, and a rejection with no handler yet ended the process (chaos test).
    const upstream = this.opts.upstream?.hasPending
      ? this.opts.upstream.write(storage, ttlMs).then(
          () => undefined,
          (err: unknown) => ({ err }),
        )
      : undefined;
    try {
      await this.index!.ensureMarker();
      await this.writeRecords(storage, batch, ttlMs);
    } catch (err) {
      // Keep the counts for the next flush instead of losing them.
      for (const [key, add] of batch) {
        const back = this.pending.get(key);
        this.pending.set(key, back ? merge(back, add) : add);
      }
      await upstream;
      throw err;
    }
    const failed = await upstream;
    if (failed) throw failed.err;
  }

  /** Write `batch` record by record; what is not written when one fails is left in `batch` (the caller keeps it). */
  private async writeRecords(storage: Storage, batch: Map<string, DayRecord>, ttlMs: number): Promise<void> {
    const index = this.index!;
    for (const [key, add] of batch) {
      const day = key.slice(0, 10);
      const name = key.slice(11);
      const list = index.listFor(day, name);
      // One transaction: the store's own atomic primitive (queued per key in this process,
      // locked across instances), so instances flushing the same row never lose a race; the
      // record's name joins its day's list in it, so a read finds every record by key.
      await storage.transact(list ? [PREFIX + key, list] : [PREFIX + key], (read) => {
        const current = read<DayRecord>(PREFIX + key);
        const writes: TxWrite[] = [
          { op: 'set', key: PREFIX + key, value: merge(current ? structuredClone(current) : emptyRecord(), add), ttlMs },
        ];
        const names = list ? StatsIndex.added(read<string[]>(list), name) : undefined;
        if (list && names) writes.push({ op: 'set', key: list, value: names, ttlMs });
        return { writes, result: null };
      });
      if (list) index.remember(day, name);
      batch.delete(key);
    }
  }

  /** The last `days` UTC days (today included), from the store: the same on every instance. */
  async snapshot(days = 7): Promise<StatisticsSnapshot> {
    await this.flushEverywhere();
    const today = Math.floor(this.now() / DAY_MS);
    const wanted = new Set(Array.from({ length: days }, (_, i) => dayString(today - i)));
    const entries: Array<[string, DayRecord]> = [];
    if (this.storage) {
      // The first write ensures the index marker; an instance that has written nothing yet does
      // it here, so a read finds records by key, never by listing the store.
      await this.index!.ensureMarker();
      const keys = await this.index!.recordKeys([...wanted], this.opts.retentionDays ?? 90);
      const values = await this.storage.getMany<DayRecord>(keys.map((k) => PREFIX + k));
      keys.forEach((k, i) => values[i] && entries.push([k, values[i]!]));
    } else {
      for (const [k, r] of this.pending) if (wanted.has(k.slice(0, 10))) entries.push([k, r]);
    }
    return summarize(entries, days, dayString(today - days + 1));
  }

  /**
   * Forget this instance's counts not yet written (another instance cleared the statistics: what
   * was counted here before the clear must not reappear at the next flush).
   */
  dropPending(): void {
    this.pending.clear();
    this.opts.upstream?.dropPending();
    this.index?.forget();
  }

  /**
   * The upstream rows of `days` (YYYY-MM-DD), one read per day; call after `snapshot`, which had
   * every instance write its pending counts (upstream ones included).
   */
  upstreamDays(days: readonly string[]): Promise<UpstreamDay[]> {
    return this.opts.upstream?.read(this.storage, days) ?? Promise.resolve(days.map(() => ({})));
  }

  /** Forget everything: pending counts and, cluster-wide, the stored records. */
  async reset(): Promise<void> {
    this.pending.clear();
    this.opts.upstream?.dropPending();
    if (!this.storage) return;
    await this.flushing?.catch(() => undefined);
    // Every record and day list goes; the index's marker stays (nothing left predates the index).
    // A page at a time: 90 days of records is one key per day, entry point and procedure.
    let cursor: string | undefined;
    do {
      const page = await this.storage.listKeys(PREFIX, { cursor, limit: RESET_PAGE });
      await Promise.all(page.keys.filter((k) => k !== StatsIndex.markerKey).map((k) => this.storage!.delete(k)));
      cursor = page.cursor;
    } while (cursor !== undefined);
    this.index?.forget();
  }
}
