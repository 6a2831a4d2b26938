import {
  mergeUpstream,
  upstreamPercentile,
  UPSTREAM_BOUNDS_MS,
  type UpstreamDay,
  type UpstreamRecord,
} from '../../observability/UpstreamStats.js';
import type { StatisticsSnapshot } from '../../runtime/dayRecords.js';
import type { Totals } from '../../services/billing/history.js';

/** One provider's or model's figures per day of the period (arrays aligned with `OverviewSeries.days`). */
export interface KeySeries {
  /** Provider id, or `provider/model`. */
  key: string;
  /** HTTP calls to the provider (every attempt, failed ones included) and those that failed. */
  calls: number[];
  failures: number[];
  /** Time to the response headers: the bucket upper bound (ms) holding the percentile; null without an answered call. */
  p50Ms: Array<number | null>;
  p99Ms: Array<number | null>;
  /** Metered calls (platform-paid and BYOK), their tokens and estimated money (USD). */
  aiCalls: number[];
  tokens: number[];
  costUsd: number[];
}

export interface OverviewSeries {
  /** Every UTC day of the period, ascending (YYYY-MM-DD). */
  days: string[];
  byEntry: Array<{ key: string; requests: number[]; errors: number[] }>;
  byProvider: KeySeries[];
  byModel: KeySeries[];
  /** Over the whole period, per provider, cluster-wide. */
  upstreamByProvider: Array<{ provider: string; calls: number; failures: number; p50Ms: number | null; p99Ms: number | null }>;
}

/** Models plotted from the upstream rows besides those the usage ranking named. */
const MAX_UPSTREAM_MODELS = 10;

const emptyRecord = (): UpstreamRecord => ({ calls: 0, failures: 0, buckets: new Array(UPSTREAM_BOUNDS_MS.length + 1).fill(0) });

/**
 * The overview's series over time, from rows already read: the request statistics (per day and
 * entry point), the global usage day rows (per day, provider and model: tokens, money) and the
 * upstream day rows (calls, failures, latency buckets). Pure: no storage here.
 */
export function overviewSeries(
  days: string[],
  statistics: Pick<StatisticsSnapshot, 'byDayEntry'>,
  usage: { seriesByProvider?: Array<{ provider: string; byDay: Totals[] }>; seriesByModel?: Array<{ model: string; byDay: Totals[] }> },
  upstream: UpstreamDay[],
): OverviewSeries {
  const index = new Map(days.map((d, i) => [d, i]));
  const entries = new Map<string, { key: string; requests: number[]; errors: number[] }>();
  for (const e of statistics.byDayEntry) {
    const i = index.get(e.day);
    if (i === undefined) continue;
    let s = entries.get(e.transport);
    if (!s) entries.set(e.transport, (s = { key: e.transport, requests: days.map(() => 0), errors: days.map(() => 0) }));
    s.requests[i]! += e.total;
    s.errors[i]! += e.errors;
  }

  // Upstream records per provider and per model, per day.
  const upProvider = new Map<string, UpstreamRecord[]>();
  const upModel = new Map<string, UpstreamRecord[]>();
  const at = (m: Map<string, UpstreamRecord[]>, key: string) => {
    let row = m.get(key);
    if (!row) m.set(key, (row = days.map(emptyRecord)));
    return row;
  };
  upstream.forEach((row, d) => {
    for (const [pair, r] of Object.entries(row)) {
      mergeUpstream(at(upProvider, pair.slice(0, pair.indexOf('/')))[d]!, r);
      mergeUpstream(at(upModel, pair)[d]!, r);
    }
  });
  const sum = (rs: UpstreamRecord[]) => rs.reduce((a, r) => mergeUpstream(a, r), emptyRecord());

  const usageProvider = new Map((usage.seriesByProvider ?? []).map((s) => [s.provider, s.byDay]));
  const usageModel = new Map((usage.seriesByModel ?? []).map((s) => [s.model, s.byDay]));
  const build = (key: string, up: UpstreamRecord[] | undefined, use: Totals[] | undefined): KeySeries => ({
    key,
    calls: days.map((_, i) => up?.[i]?.calls ?? 0),
    failures: days.map((_, i) => up?.[i]?.failures ?? 0),
    p50Ms: days.map((_, i) => (up ? upstreamPercentile(up[i]!.buckets, 50) : null)),
    p99Ms: days.map((_, i) => (up ? upstreamPercentile(up[i]!.buckets, 99) : null)),
    aiCalls: days.map((_, i) => use?.[i]?.requests ?? 0),
    tokens: days.map((_, i) => use?.[i]?.tokensUsed ?? 0),
    costUsd: days.map((_, i) => use?.[i]?.estimatedCostUsd ?? 0),
  });
  // Providers are few (the configured ones); models are bounded: the usage ranking's plus the
  // upstream's busiest (failing models have no usage but belong on an errors plot).
  const providers = [...new Set([...usageProvider.keys(), ...upProvider.keys()])].sort();
  const busiestUpstream = [...upModel]
    .sort((a, b) => sum(b[1]).calls - sum(a[1]).calls || a[0].localeCompare(b[0]))
    .slice(0, MAX_UPSTREAM_MODELS)
    .map(([k]) => k);
  const models = [...new Set([...usageModel.keys(), ...busiestUpstream])].sort();
  return {
    days,
    byEntry: [...entries.values()].sort((a, b) => a.key.localeCompare(b.key)),
    byProvider: providers.map((p) => build(p, upProvider.get(p), usageProvider.get(p))),
    byModel: models.map((m) => build(m, upModel.get(m), usageModel.get(m))),
    upstreamByProvider: [...upProvider]
      .sort((a, b) => a[0].localeCompare(b[0]))
      .map(([provider, rs]) => {
        const total = sum(rs);
        return {
          provider,
          calls: total.calls,
          failures: total.failures,
          p50Ms: upstreamPercentile(total.buckets, 50),
          p99Ms: upstreamPercentile(total.buckets, 99),
        };
      }),
  };
}
