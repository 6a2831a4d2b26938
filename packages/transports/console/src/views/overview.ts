import { call } from '../api.js';
import { barChart, timeChart, type Series } from '../charts.js';
import { clear, fmt, h, section, stat, table, THIS_PROCESS } from '../dom.js';
import type { View } from '../view.js';
import type { KeySeries, Overview } from '../types.js';

/** What the "over time" chart can show per group; entry points have requests and errors only. */
const METRICS = {
  entry: [
    ['requests', 'Requests'],
    ['errors', 'Errors'],
  ],
  provider: [
    ['calls', 'Upstream calls'],
    ['failures', 'Upstream failures'],
    ['tokens', 'Tokens'],
    ['costUsd', 'Money (USD)'],
    ['p50Ms', 'Upstream latency p50 (ms)'],
    ['p99Ms', 'Upstream latency p99 (ms)'],
    ['aiCalls', 'Metered AI calls'],
  ],
} as const;
type Group = 'entry' | 'provider' | 'model';
type Metric = 'requests' | 'errors' | (typeof METRICS.provider)[number][0];
/** Periods the overview offers (days, today included). */
const PERIODS = [7, 14, 30, 90];
/** Lines on one chart at most (the palette's size): the busiest keys of the period. */
const MAX_LINES = 8;

const total = (values: Array<number | null>) => values.reduce<number>((a, v) => a + (v ?? 0), 0);

/** The series of one group and metric, busiest first (by the metric's period total; latency by calls). */
function seriesFor(s: NonNullable<Overview['series']>, group: Group, metric: Metric): Series[] {
  if (group === 'entry') {
    const m = metric === 'errors' ? 'errors' : 'requests';
    return s.byEntry
      .map((e) => ({ label: e.key, values: e[m] }))
      .sort((a, b) => total(b.values) - total(a.values))
      .slice(0, MAX_LINES);
  }
  const rows: KeySeries[] = group === 'provider' ? s.byProvider : s.byModel;
  const m = metric === 'requests' || metric === 'errors' ? 'calls' : metric;
  const weight = (k: KeySeries) => (m === 'p50Ms' || m === 'p99Ms' ? total(k.calls) : total(k[m]));
  return [...rows]
    .sort((a, b) => weight(b) - weight(a))
    .slice(0, MAX_LINES)
    .map((k) => ({ label: k.key, values: k[m] }));
}

/**
 * Requests, errors, tokens, money and upstream latency over time by entry point, provider or
 * model: one chart, two selects (native, keyboard-usable); redrawn from the same answer.
 */
function overTime(host: HTMLElement, s: NonNullable<Overview['series']>): void {
  const groupSelect = h(
    'select',
    { id: 'series-group' },
    h('option', { value: 'entry' }, 'Entry point'),
    h('option', { value: 'provider' }, 'Provider'),
    h('option', { value: 'model' }, 'Model'),
  );
  const metricSelect = h('select', { id: 'series-metric' });
  const plot = h('div', {});
  const fillMetrics = (group: Group, keep: string) => {
    clear(metricSelect);
    const options = group === 'entry' ? METRICS.entry : METRICS.provider;
    for (const [value, label] of options) metricSelect.appendChild(h('option', { value, selected: value === keep }, label));
  };
  const draw = () => {
    const group = groupSelect.value as Group;
    const metric = metricSelect.value as Metric;
    const label = metricSelect.selectedOptions[0]?.textContent ?? metric;
    const groupLabel = groupSelect.selectedOptions[0]?.textContent?.toLowerCase() ?? group;
    clear(plot);
    timeChart(plot, 'series-over-time', `${label} per day by ${groupLabel}`, s.days, seriesFor(s, group, metric), {
      money: metric === 'costUsd',
    });
  };
  groupSelect.addEventListener('change', () => {
    fillMetrics(groupSelect.value as Group, metricSelect.value);
    draw();
  });
  metricSelect.addEventListener('change', draw);
  fillMetrics('entry', 'requests');
  host.append(
    h('h2', {}, 'Over time'),
    h(
      'div',
      { class: 'row' },
      h('label', { for: 'series-group' }, 'By'),
      groupSelect,
      h('label', { for: 'series-metric' }, 'Show'),
      metricSelect,
    ),
    plot,
  );
  draw();
}

/** Every UTC day of the period, so series without traffic on a day show a zero, not a gap. */
function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** Overview: one call (admin.overview) feeds every figure and chart. */
export const overviewView: View = async (main, _me, arg) => {
  // The period is in the address (#/overview/30), so a link or a reload keeps it.
  const period = PERIODS.includes(Number(arg)) ? Number(arg) : 14;
  const select = h(
    'select',
    { id: 'overview-period' },
    PERIODS.map((d) => h('option', { value: d, selected: d === period }, `last ${d} days`)),
  );
  select.addEventListener('change', () => (location.hash = `#/overview/${select.value}`));
  main.append(
    h('div', { class: 'row' }, h('h1', {}, 'Overview'), h('label', { for: 'overview-period', class: 'sr-only' }, 'Period'), select),
  );
  const o = await call('admin.overview', { days: period });
  const days = daysOf(o.period.from, o.period.to);
  const u = o.usage;
  main.appendChild(
    h(
      'div',
      { class: 'stats' },
      // Counts of this process only are labelled so: with statistics off the request counts are
      // this instance's since it started, and MCP sessions and streams are always per instance.
      stat(`Requests${o.series ? '' : ` (${THIS_PROCESS})`}`, fmt.int(o.requests.total), 'stat-requests'),
      stat(`Errors${o.series ? '' : ` (${THIS_PROCESS})`}`, fmt.int(o.requests.errors), 'stat-errors'),
      stat('AI calls', fmt.int(u.totals.requests), 'stat-ai-calls'),
      stat('Tokens', fmt.int(u.totals.tokensUsed), 'stat-tokens'),
      stat('Cost (platform)', fmt.usd(u.totals.platformCostUsd), 'stat-cost'),
      stat('MCP sessions (this instance)', o.mcp ? fmt.int(o.mcp.sessions) : '–', 'stat-mcp-sessions'),
      stat('MCP streams (this instance)', o.mcp ? fmt.int(o.mcp.streams) : '–', 'stat-mcp-streams'),
      stat('Alerts waiting / dead', `${o.alerts.outbox} / ${o.alerts.dead}`, 'stat-alerts'),
    ),
  );
  if (o.series) overTime(main.appendChild(h('section', { class: 'card', id: 'over-time' })), o.series);
  const grid = h('div', { class: 'grid' });
  main.appendChild(grid);
  const cell = () => grid.appendChild(h('div', { class: 'card' }));

  const entries = [...new Set(o.requests.byDayEntry.map((e) => e.transport))].sort();
  const perEntry = (field: 'total' | 'errors') =>
    entries.map((t) => ({
      label: t,
      values: days.map((d) => o.requests.byDayEntry.find((e) => e.day === d && e.transport === t)?.[field] ?? 0),
    }));
  timeChart(cell(), 'requests-by-entry', 'Requests per day by entry point', days, perEntry('total'));
  timeChart(cell(), 'errors-by-entry', 'Errors per day by entry point', days, perEntry('errors'));
  const byDate = new Map((u.byDay ?? []).map((d) => [d.date, d]));
  timeChart(cell(), 'tokens-by-day', 'Tokens per day', days, [
    { label: 'tokens', values: days.map((d) => byDate.get(d)?.tokensUsed ?? 0) },
  ]);
  timeChart(
    cell(),
    'cost-by-day',
    'Money per day (USD)',
    days,
    [{ label: 'USD', values: days.map((d) => byDate.get(d)?.estimatedCostUsd ?? 0) }],
    { money: true },
  );
  const providers = u.byProvider ?? [];
  barChart(
    cell(),
    'tokens-by-provider',
    'Tokens by provider',
    providers.map((p) => p.provider),
    [{ label: 'tokens', values: providers.map((p) => p.tokensUsed) }],
  );
  const models = u.byModel ?? [];
  barChart(
    cell(),
    'cost-by-model',
    'Money by model (USD)',
    models.map((m) => m.model),
    [{ label: 'USD', values: models.map((m) => m.estimatedCostUsd) }],
    { money: true },
  );
  // Cluster-wide from the statistics; this instance's counters only when statistics are off.
  const up = o.series?.upstreamByProvider ?? o.upstream ?? [];
  const where = o.series ? 'all instances' : THIS_PROCESS;
  barChart(
    cell(),
    'upstream-latency',
    `Upstream latency p50 / p99 by provider (${where})`,
    up.map((p) => p.provider),
    [
      { label: 'p50', values: up.map((p) => p.p50Ms) },
      { label: 'p99', values: up.map((p) => p.p99Ms) },
    ],
    { unit: ' ms' },
  );
  barChart(
    cell(),
    'upstream-calls',
    `Upstream calls and failures (${where})`,
    up.map((p) => p.provider),
    [
      { label: 'calls', values: up.map((p) => p.calls) },
      { label: 'failures', values: up.map((p) => p.failures) },
    ],
  );

  main.append(
    section(
      'Top users by cost',
      table(
        ['user', 'calls', 'tokens', 'USD'],
        (u.topUsers ?? []).map((x) => [
          h('a', { href: `#/users/${encodeURIComponent(x.userId)}` }, x.userId),
          fmt.int(x.requests),
          fmt.int(x.tokensUsed),
          fmt.usd(x.estimatedCostUsd),
        ]),
      ),
    ),
    section(
      'Busiest procedures',
      table(
        ['entry', 'procedure', 'calls', 'errors', 'cache hits', 'tokens from cache', 'p50', 'p99'],
        o.requests.procedures.map((p) => [
          p.transport,
          p.path,
          fmt.int(p.count),
          fmt.int(p.errors),
          fmt.int(p.cacheHits),
          fmt.int(p.cachedTokens),
          fmt.ms(p.latencyMs.p50),
          fmt.ms(p.latencyMs.p99),
        ]),
      ),
    ),
  );
};
