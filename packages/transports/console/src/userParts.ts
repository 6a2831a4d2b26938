import { barChart, timeChart } from './charts.js';
import { clear, errorBox, fmt, h, section, table } from './dom.js';
import type { Output } from './types.js';

/** The pieces the administrator's user view and the user's own view share. */

/** Usage per day and provider: a user's own (billing.getUsageAnalytics) or any user's (admin.userUsage). */
export type Analytics = Pick<Output<'billing.getUsageAnalytics'>, 'period' | 'byDay' | 'byProvider'>;
export type BudgetPeriod = Output<'billing.getBudget'>['periods'][number];

export function usageCharts(host: HTMLElement, a: Analytics): void {
  const days: string[] = [];
  const end = Date.parse(a.period.endDate.slice(0, 10) + 'T00:00:00Z');
  for (let t = Date.parse(a.period.startDate.slice(0, 10) + 'T00:00:00Z'); t <= end; t += 86_400_000)
    days.push(new Date(t).toISOString().slice(0, 10));
  const byDate = new Map(a.byDay.map((d) => [d.date, d]));
  const grid = h('div', { class: 'grid' });
  host.appendChild(section(`Usage, last ${a.period.days} days`, grid));
  timeChart(grid.appendChild(h('div', {})), 'user-tokens-by-day', 'Tokens per day', days, [
    { label: 'tokens', values: days.map((d) => byDate.get(d)?.tokensUsed ?? 0) },
  ]);
  timeChart(grid.appendChild(h('div', {})), 'user-calls-by-day', 'Calls per day', days, [
    { label: 'calls', values: days.map((d) => byDate.get(d)?.requests ?? 0) },
  ]);
  const providers = Object.entries(a.byProvider);
  barChart(
    grid.appendChild(h('div', {})),
    'user-tokens-by-provider',
    'Tokens by provider',
    providers.map(([p]) => p),
    [{ label: 'tokens', values: providers.map(([, v]) => v.tokensUsed) }],
  );
}

export function budgetSection(periods: BudgetPeriod[]): HTMLElement {
  const limit = (v: number | null, usd = false) => (v === null ? 'no limit' : usd ? fmt.usd(v) : fmt.int(v));
  const host = section('Budgets');
  if (periods.every((p) => p.source === null)) host.appendChild(h('p', { class: 'muted' }, 'No budget applies.'));
  host.appendChild(
    table(
      ['period', 'source', 'token limit', 'tokens spent', 'USD limit', 'USD spent', 'resets'],
      periods.map((p) => [
        p.period,
        p.source ?? '–',
        limit(p.limits.tokens),
        fmt.int(p.spent.tokens + p.reserved.tokens),
        limit(p.limits.usd, true),
        fmt.usd(p.spent.usd + p.reserved.usd),
        fmt.time(p.resetsAt),
      ]),
    ),
  );
  const limited = periods.filter((p) => p.limits.tokens !== null);
  if (limited.length)
    barChart(
      host,
      'budget-spend',
      'Budget: tokens spent of the limit',
      limited.map((p) => p.period),
      [
        { label: 'spent', values: limited.map((p) => p.spent.tokens) },
        { label: 'limit', values: limited.map((p) => p.limits.tokens) },
      ],
    );
  return host;
}

interface LedgerPage {
  items: Array<Record<string, unknown>>;
  nextCursor?: number;
}

const KINDS = { usage: 'AI calls', purchases: 'Credits and purchases', consumption: 'What paid each call' } as const;
export type LedgerKind = keyof typeof KINDS;

function ledgerRow(kind: LedgerKind, it: Record<string, unknown>): Array<string | number> {
  const s = (k: string) => (it[k] === undefined || it[k] === null ? '–' : String(it[k]));
  if (kind === 'usage')
    return [
      fmt.time(s('at')),
      s('mode'),
      `${s('provider')}/${s('model')}`,
      fmt.int(it.tokensUsed as number),
      fmt.int(it.tokensCharged as number),
      fmt.usd(it.estimatedCostUsd as number | undefined),
    ];
  if (kind === 'purchases') return [fmt.time(s('at')), s('type'), fmt.int(it.tokens as number), s('source')];
  const paid =
    it.paidBy === 'byok'
      ? 'own key'
      : Object.entries((it.paidBy ?? {}) as Record<string, number>)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ');
  return [fmt.time(s('at')), `${s('provider')}/${s('model')}`, paid, fmt.int(it.tokensCharged as number)];
}
const HEADERS: Record<LedgerKind, string[]> = {
  usage: ['time', 'paid by', 'model', 'tokens', 'charged', 'USD'],
  purchases: ['time', 'balance', 'tokens', 'source'],
  consumption: ['time', 'model', 'paid from', 'charged'],
};

/**
 * The ledger, one page at a time (newest first, "Older" follows the cursor): reading a page costs
 * the same whatever the ledger's length. Only figures are shown, never call metadata.
 */
export function ledgerSection(load: (kind: LedgerKind, cursor: number | undefined) => Promise<LedgerPage>): HTMLElement {
  const body = h('div', { id: 'ledger' });
  let kind: LedgerKind = 'usage';
  const cursors: Array<number | undefined> = [undefined];
  const show = async () => {
    clear(body);
    try {
      const page = await load(kind, cursors.at(-1));
      body.appendChild(
        table(
          HEADERS[kind],
          page.items.map((it) => ledgerRow(kind, it)),
          `${KINDS[kind]}${page.items.length ? '' : ' (none)'}`,
        ),
      );
      body.appendChild(
        h(
          'div',
          { class: 'row' },
          cursors.length > 1 ? h('button', { onclick: () => (cursors.pop(), void show()) }, 'Newer') : null,
          page.nextCursor !== undefined
            ? h('button', { id: 'ledger-older', onclick: () => (cursors.push(page.nextCursor), void show()) }, 'Older')
            : null,
        ),
      );
    } catch (e) {
      body.appendChild(errorBox(e));
    }
  };
  const tabs = h(
    'div',
    { class: 'row', role: 'tablist' },
    (Object.keys(KINDS) as LedgerKind[]).map((k) =>
      h(
        'button',
        {
          role: 'tab',
          'data-ledger': k,
          'aria-selected': k === kind ? 'true' : 'false',
          onclick: (ev: Event) => {
            kind = k;
            cursors.splice(1);
            tabs.querySelectorAll('button').forEach((b) => b.setAttribute('aria-selected', String(b === ev.currentTarget)));
            void show();
          },
        },
        KINDS[k],
      ),
    ),
  );
  void show();
  const s = section('Ledger', tabs, body);
  (s as HTMLElement & { refresh?: () => Promise<void> }).refresh = () => {
    cursors.splice(1);
    return show();
  };
  return s;
}

export type ApiKeyRecord = Output<'keys.list'>['keys'][number];

export function keysTable(keys: ApiKeyRecord[], actions?: (k: ApiKeyRecord) => Node | null): HTMLTableElement {
  return table(
    ['name', 'id', 'created', 'expires', 'last used', 'state', ...(actions ? [''] : [])],
    keys.map((k) => [
      k.name,
      k.id,
      fmt.time(k.createdAt),
      k.expiresAt ? fmt.time(k.expiresAt) : 'never',
      fmt.time(k.lastUsedAt ?? null),
      k.revokedAt ? 'revoked' : 'active',
      ...(actions ? [actions(k) ?? ''] : []),
    ]),
  );
}
