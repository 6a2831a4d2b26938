import type { Storage } from '../kernel/Storage.js';
import { FAMILY_LISTED } from '../kernel/ownerListings.js';
import { bucketPercentile } from '../lib/bucketPercentile.js';

/**
 * Upstream latency bucket upper bounds in ms (time to the response headers; the last bucket is
 * everything above). The same on every instance, so bucket counts add up across the cluster.
 */
export const UPSTREAM_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2000, 4000, 8000, 15_000, 30_000, 60_000, 120_000] as const;
/** Distinct provider/model pairs kept per day row; further pairs count under `<provider>/other`. */
export const MAX_PAIRS_PER_DAY = 200;
const DAY_MS = 86_400_000;

/** One provider/model's HTTP calls on one UTC day, as stored. */
export interface UpstreamRecord {
  calls: number;
  /** Calls answered with a non-2xx status, or with no answer (network error, aborted). */
  failures: number;
  /** Counts per latency bucket (UPSTREAM_BOUNDS_MS plus one overflow), of calls that got an answer. */
  buckets: number[];
}

/** A day row: records by `provider/model`. */
export type UpstreamDay = Record<string, UpstreamRecord>;

export const upstreamDayKey = (day: string) => `${FAMILY_LISTED.stats}upstream:${day}`;

const emptyRecord = (): UpstreamRecord => ({ calls: 0, failures: 0, buckets: new Array(UPSTREAM_BOUNDS_MS.length + 1).fill(0) });

export function mergeUpstream(into: UpstreamRecord, add: UpstreamRecord): UpstreamRecord {
  into.calls += add.calls;
  into.failures += add.failures;
  for (let i = 0; i < into.buckets.length; i++) into.buckets[i] = (into.buckets[i] ?? 0) + (add.buckets[i] ?? 0);
  return into;
}

function mergeDay(into: UpstreamDay, add: UpstreamDay): UpstreamDay {
  for (const [pair, r] of Object.entries(add)) {
    let key = pair;
    if (!(key in into) && Object.keys(into).length >= MAX_PAIRS_PER_DAY) key = `${pair.slice(0, pair.indexOf('/'))}/other`;
    const current = into[key];
    into[key] = mergeUpstream(current ? structuredClone(current) : emptyRecord(), r);
  }
  return into;
}

/** The bucket upper bound (ms) holding the `p`th percentile of the answered calls; null without any (or above the last bound). */
export function upstreamPercentile(buckets: readonly number[], p: number): number | null {
  return bucketPercentile(buckets, UPSTREAM_BOUNDS_MS, p);
}

/**
 * Calls to model providers per UTC day, provider and model, cluster-wide: each instance counts
 * its HTTP attempts in memory (observedFetch, beside the Prometheus counters) and adds them to
 * one row per day (`stats:upstream:<day>`) when the request statistics flush, in a transaction,
 * so instances never lose each other's counts. A reader gets a period with one read per day,
 * whatever the traffic or the ledger. Latency is bucket counts, which add up across instances;
 * a percentile is a bucket's upper bound.
 */
export class UpstreamStats {
  private pending = new Map<string, UpstreamDay>();
  private day = -1;
  private dayKey = '';

  constructor(private readonly now: () => number = Date.now) {}

  /** One HTTP attempt ended: its status class or 'network'/'aborted', and its time to headers when it got an answer. */
  record(provider: string, model: string, outcome: string, seconds: number | undefined): void {
    const day = Math.floor(this.now() / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.dayKey = new Date(day * DAY_MS).toISOString().slice(0, 10);
    }
    let row = this.pending.get(this.dayKey);
    if (!row) this.pending.set(this.dayKey, (row = {}));
    let pair = `${provider}/${model}`;
    if (!row[pair] && Object.keys(row).length >= MAX_PAIRS_PER_DAY) pair = `${provider}/other`;
    const r = (row[pair] ??= emptyRecord());
    r.calls++;
    if (!outcome.startsWith('2')) r.failures++;
    if (seconds !== undefined) {
      const ms = seconds * 1000;
      let b = UPSTREAM_BOUNDS_MS.findIndex((bound) => ms <= bound);
      if (b < 0) b = UPSTREAM_BOUNDS_MS.length;
      r.buckets[b]!++;
    }
  }

  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /** Forget counts not yet written (the statistics were cleared elsewhere). */
  dropPending(): void {
    this.pending.clear();
  }

  /** Add what is pending to the store, a day row per transaction; a failed write keeps its counts for the next. */
  async write(storage: Storage, ttlMs: number): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    for (const [day, add] of batch) {
      const key = upstreamDayKey(day);
      try {
        await storage.transact([key], (read) => ({
          writes: [{ op: 'set', key, value: mergeDay(structuredClone(read<UpstreamDay>(key) ?? {}), add), ttlMs }],
          result: null,
        }));
      } catch (err) {
        this.pending.set(day, mergeDay(this.pending.get(day) ?? {}, add));
        throw err;
      }
    }
  }

  /** The rows of `days` (YYYY-MM-DD), in order: from the store, or (no store) what this instance counted. */
  async read(storage: Storage | undefined, days: readonly string[]): Promise<UpstreamDay[]> {
    if (!storage) return days.map((d) => structuredClone(this.pending.get(d) ?? {}));
    const rows = await storage.getMany<UpstreamDay>(days.map(upstreamDayKey));
    return rows.map((r) => r ?? {});
  }
}
