import { rpc } from '../api.js';
import { barChart, timeChart } from '../charts.js';
import { fmt, h, section, stat, table } from '../dom.js';
import type { View } from '../main.js';

interface Totals {
  requests: number;
  tokensUsed: number;
  estimatedCostUsd: number;
}
interface Overview {
  period: { from: string; to: string; days: number };
  requests: {
    total: number;
    errors: number;
    byDay: Array<{ day: string; total: number; errors: number }>;
    byDayEntry: Array<{ day: string; transport: string; total: number; errors: number }>;
    procedures: Array<{ transport: string; path: string; count: number; errors: number; latencyMs: { p50: number | null; p99: number | null } }>;
  };
  usage: {
    totals: Totals & { platformCostUsd: number; byokCostUsd: number; platformRequests: number; byokRequests: number };
    byDay?: Array<{ date: string } & Totals>;
    byProvider?: Array<{ provider: string } & Totals>;
    byModel?: Array<{ model: string } & Totals>;
    topUsers?: Array<{ userId: string } & Totals>;
  };
  upstream: Array<{ provider: string; calls: number; failures: number; p50Ms: number | null; p99Ms: number | null }> | null;
  mcp: { sessions: number; streams: number } | null;
  alerts: { outbox: number; dead: number };
}

/** Every UTC day of the period, so series without traffic on a day show a zero, not a gap. */
function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** Overview: one call (admin.overview) feeds every figure and chart. */
export const overviewView: View = async (main) => {
  main.appendChild(h('h1', {}, 'Overview'));
  const o = await rpc<Overview>('admin.overview', { days: 14 });
  const days = daysOf(o.period.from, o.period.to);
  const u = o.usage;
  main.appendChild(
    h(
      'div',
      { class: 'stats' },
      stat('Requests', fmt.int(o.requests.total), 'stat-requests'),
      stat('Errors', fmt.int(o.requests.errors), 'stat-errors'),
      stat('AI calls', fmt.int(u.totals.requests), 'stat-ai-calls'),
      stat('Tokens', fmt.int(u.totals.tokensUsed), 'stat-tokens'),
      stat('Cost (platform)', fmt.usd(u.totals.platformCostUsd), 'stat-cost'),
      stat('MCP sessions', o.mcp ? fmt.int(o.mcp.sessions) : '–', 'stat-mcp-sessions'),
      stat('MCP streams', o.mcp ? fmt.int(o.mcp.streams) : '–', 'stat-mcp-streams'),
      stat('Alerts waiting / dead', `${o.alerts.outbox} / ${o.alerts.dead}`, 'stat-alerts'),
    ),
  );
  const grid = h('div', { class: 'grid' });
  main.appendChild(grid);
  const cell = () => grid.appendChild(h('div', { class: 'card' }));

  const entries = [...new Set(o.requests.byDayEntry.map((e) => e.transport))].sort();
  const perEntry = (field: 'total' | 'errors') =>
    entries.map((t) => ({ label: t, values: days.map((d) => o.requests.byDayEntry.find((e) => e.day === d && e.transport === t)?.[field] ?? 0) }));
  timeChart(cell(), 'requests-by-entry', 'Requests per day by entry point', days, perEntry('total'));
  timeChart(cell(), 'errors-by-entry', 'Errors per day by entry point', days, perEntry('errors'));
  const byDate = new Map((u.byDay ?? []).map((d) => [d.date, d]));
  timeChart(cell(), 'tokens-by-day', 'Tokens per day', days, [{ label: 'tokens', values: days.map((d) => byDate.get(d)?.tokensUsed ?? 0) }]);
  timeChart(cell(), 'cost-by-day', 'Money per day (USD)', days, [{ label: 'USD', values: days.map((d) => byDate.get(d)?.estimatedCostUsd ?? 0) }], { money: true });
  const providers = u.byProvider ?? [];
  barChart(cell(), 'tokens-by-provider', 'Tokens by provider', providers.map((p) => p.provider), [{ label: 'tokens', values: providers.map((p) => p.tokensUsed) }]);
  const models = u.byModel ?? [];
  barChart(cell(), 'cost-by-model', 'Money by model (USD)', models.map((m) => m.model), [{ label: 'USD', values: models.map((m) => m.estimatedCostUsd) }], { money: true });
  const up = o.upstream ?? [];
  barChart(cell(), 'upstream-latency', 'Upstream latency by provider (this instance)', up.map((p) => p.provider), [{ label: 'p50', values: up.map((p) => p.p50Ms) }, { label: 'p99', values: up.map((p) => p.p99Ms) }], { unit: ' ms' });
  barChart(cell(), 'upstream-calls', 'Upstream calls and failures (this instance)', up.map((p) => p.provider), [{ label: 'calls', values: up.map((p) => p.calls) }, { label: 'failures', values: up.map((p) => p.failures) }]);

  main.append(
    section(
      'Top users by cost',
      table(['user', 'calls', 'tokens', 'USD'], (u.topUsers ?? []).map((x) => [h('a', { href: `#/users/${encodeURIComponent(x.userId)}` }, x.userId), fmt.int(x.requests), fmt.int(x.tokensUsed), fmt.usd(x.estimatedCostUsd)])),
    ),
    section(
      'Busiest procedures',
      table(['entry', 'procedure', 'calls', 'errors', 'p50', 'p99'], o.requests.procedures.map((p) => [p.transport, p.path, fmt.int(p.count), fmt.int(p.errors), fmt.ms(p.latencyMs.p50), fmt.ms(p.latencyMs.p99)])),
    ),
  );
};
