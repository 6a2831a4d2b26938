/**
 * The statistics' stored record (one per UTC day, entry point and procedure) and what a read makes
 * of a period's records: totals, per procedure with latency percentiles, per day and entry point.
 */
import { bucketPercentile } from '../lib/bucketPercentile.js';

/** Latency bucket upper bounds in ms (the last bucket is everything above). Shared by every instance. */
export const LATENCY_BOUNDS_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000] as const;
/** One (day, entry point, procedure) record, as stored. */
export interface DayRecord {
  count: number;
  errors: number;
  totalMs: number;
  /** Counts per latency bucket (LATENCY_BOUNDS_MS plus one overflow bucket). */
  buckets: number[];
  /** Calls answered from the response cache (absent in records written before it was counted). */
  cacheHits?: number;
  /** The tokens those cached answers used when they were first produced (what the hits saved). */
  cachedTokens?: number;
}

export interface ProcedureStatistics {
  transport: string;
  path: string;
  count: number;
  errors: number;
  avgMs: number;
  /** Calls of `count` answered from the response cache (ai.cache), and the tokens their answers had used. */
  cacheHits: number;
  cachedTokens: number;
  /** Upper bound of the latency bucket holding the percentile (null above the last bound). */
  latencyMs: { p50: number | null; p90: number | null; p99: number | null };
}

export interface StatisticsSnapshot {
  days: number;
  /** First UTC day included (YYYY-MM-DD). */
  since: string;
  total: number;
  errors: number;
  /** Calls answered from the response cache, and the tokens those answers had used when first produced. */
  cacheHits: number;
  cachedTokens: number;
  procedures: ProcedureStatistics[];
  byDay: Array<{ day: string; total: number; errors: number }>;
  /** Per day and entry point (trpc, rpc, mcp, openai, anthropic, internal), days ascending. */
  byDayEntry: Array<{ day: string; transport: string; total: number; errors: number }>;
}

export const emptyRecord = (): DayRecord => ({ count: 0, errors: 0, totalMs: 0, buckets: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0) });

export function merge(into: DayRecord, add: DayRecord): DayRecord {
  into.count += add.count;
  into.errors += add.errors;
  into.totalMs += add.totalMs;
  if (add.cacheHits) {
    into.cacheHits = (into.cacheHits ?? 0) + add.cacheHits;
    into.cachedTokens = (into.cachedTokens ?? 0) + (add.cachedTokens ?? 0);
  }
  for (let i = 0; i < into.buckets.length; i++) into.buckets[i] = (into.buckets[i] ?? 0) + (add.buckets[i] ?? 0);
  return into;
}

const percentile = (buckets: number[], count: number, p: number) => bucketPercentile(buckets, LATENCY_BOUNDS_MS, p, count);

/** A period's summary from its records (`<day>:<entry>:<procedure>` keys without `stats:`). */
export function summarize(entries: Array<[string, DayRecord]>, days: number, since: string): StatisticsSnapshot {
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
        cacheHits: r.cacheHits ?? 0,
        cachedTokens: r.cachedTokens ?? 0,
        latencyMs: {
          p50: percentile(r.buckets, r.count, 50),
          p90: percentile(r.buckets, r.count, 90),
          p99: percentile(r.buckets, r.count, 99),
        },
      };
    })
    .sort((a, b) => b.count - a.count || a.path.localeCompare(b.path));
  return {
    days,
    since,
    total: procedures.reduce((s, p) => s + p.count, 0),
    errors: procedures.reduce((s, p) => s + p.errors, 0),
    cacheHits: procedures.reduce((s, p) => s + p.cacheHits, 0),
    cachedTokens: procedures.reduce((s, p) => s + p.cachedTokens, 0),
    procedures,
    byDay: [...byDay].map(([day, v]) => ({ day, ...v })).sort((a, b) => a.day.localeCompare(b.day)),
    byDayEntry: [...byDayEntry.values()].sort((a, b) => a.day.localeCompare(b.day) || a.transport.localeCompare(b.transport)),
  };
}
