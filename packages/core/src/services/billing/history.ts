import type { BalanceType, LedgerEntry } from './types.js';

/** Read-side views over one user's ledger entries (oldest first in, newest first out). */

export interface PurchaseItem {
  id: string;
  at: string;
  type: BalanceType;
  tokens: number;
  source: string;
  note?: Record<string, unknown>;
}

export function purchases(entries: LedgerEntry[], opts: { type: 'all' | BalanceType; limit: number }): PurchaseItem[] {
  const out: PurchaseItem[] = [];
  for (let i = entries.length - 1; i >= 0 && out.length < opts.limit; i--) {
    const e = entries[i]!;
    if (e.kind !== 'credit') continue;
    const line = e.lines[0]!;
    if (opts.type !== 'all' && line.type !== opts.type) continue;
    out.push({ id: e.id, at: e.at, type: line.type, tokens: line.delta, source: e.source ?? 'unknown', ...(e.note ? { note: e.note } : {}) });
  }
  return out;
}

export interface UsageItem {
  id: string;
  at: string;
  requestId?: string;
  mode: 'platform' | 'byok';
  provider: string;
  model: string;
  tokensUsed: number;
  tokensCharged: number;
  platformFee: number;
  estimatedCostUsd?: number;
  metadata?: Record<string, unknown>;
}

function usageItem(e: LedgerEntry): UsageItem | undefined {
  if ((e.kind !== 'settle' && e.kind !== 'byok_usage') || !e.usage) return undefined;
  const u = e.usage;
  return {
    id: e.id,
    at: e.at,
    ...(e.requestId ? { requestId: e.requestId } : {}),
    mode: e.kind === 'settle' ? 'platform' : 'byok',
    provider: u.provider,
    model: u.model,
    tokensUsed: u.tokensUsed,
    tokensCharged: u.tokensCharged,
    platformFee: u.platformFee,
    ...(u.estimatedCostUsd !== undefined ? { estimatedCostUsd: u.estimatedCostUsd } : {}),
    ...(u.metadata ? { metadata: u.metadata } : {}),
  };
}

/** Every finished call, platform-paid or BYOK, newest first. */
export function usage(entries: LedgerEntry[], limit: number): UsageItem[] {
  const out: UsageItem[] = [];
  for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
    const item = usageItem(entries[i]!);
    if (item) out.push(item);
  }
  return out;
}

export interface ConsumptionItem {
  requestId: string;
  at: string;
  /** What paid: tokens per balance, or 'byok' for the user's own key. */
  paidBy: Partial<Record<BalanceType, number>> | 'byok';
  tokensCharged: number;
  platformFee: number;
  provider: string;
  model: string;
}

/** Which balance paid for each call (reserve and settle lines netted per request), newest first. */
export function consumption(entries: LedgerEntry[], limit: number): ConsumptionItem[] {
  const netByRequest = new Map<string, Partial<Record<BalanceType, number>>>();
  for (const e of entries) {
    if (!e.requestId || (e.kind !== 'reserve' && e.kind !== 'settle')) continue;
    const net = netByRequest.get(e.requestId) ?? {};
    for (const l of e.lines) net[l.type] = (net[l.type] ?? 0) - l.delta;
    netByRequest.set(e.requestId, net);
  }
  const out: ConsumptionItem[] = [];
  for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
    const e = entries[i]!;
    if (!e.usage || (e.kind !== 'settle' && e.kind !== 'byok_usage')) continue;
    const paidBy = e.kind === 'byok_usage' ? 'byok' : Object.fromEntries(Object.entries(netByRequest.get(e.requestId!) ?? {}).filter(([, v]) => v !== 0));
    out.push({ requestId: e.requestId ?? e.id, at: e.at, paidBy, tokensCharged: e.usage.tokensCharged, platformFee: e.usage.platformFee, provider: e.usage.provider, model: e.usage.model });
  }
  return out;
}

interface Totals {
  requests: number;
  tokensUsed: number;
  tokensCharged: number;
  platformFee: number;
  estimatedCostUsd: number;
}

const zero = (): Totals => ({ requests: 0, tokensUsed: 0, tokensCharged: 0, platformFee: 0, estimatedCostUsd: 0 });

function add(t: Totals, u: UsageItem): void {
  t.requests++;
  t.tokensUsed += u.tokensUsed;
  t.tokensCharged += u.tokensCharged;
  t.platformFee += u.platformFee;
  t.estimatedCostUsd += u.estimatedCostUsd ?? 0;
}

export interface UsageAnalytics {
  period: { days: number; startDate: string; endDate: string };
  totals: Totals & { platformRequests: number; byokRequests: number };
  byDay: Array<{ date: string } & Totals>;
  byProvider: Record<string, Totals>;
  byModel: Record<string, Totals>;
  history?: UsageItem[];
}

/** Totals over the last `days` days (UTC), per day, provider and model. */
export function analytics(entries: LedgerEntry[], opts: { days: number; includeHistory: boolean; historyLimit: number; now?: Date }): UsageAnalytics {
  const end = opts.now ?? new Date();
  const start = new Date(end.getTime() - opts.days * 86_400_000);
  const totals = { ...zero(), platformRequests: 0, byokRequests: 0 };
  const byDay = new Map<string, Totals>();
  const byProvider: Record<string, Totals> = {};
  const byModel: Record<string, Totals> = {};
  const inWindow: UsageItem[] = [];
  for (const e of entries) {
    const u = usageItem(e);
    if (!u || u.at < start.toISOString()) continue;
    inWindow.push(u);
    add(totals, u);
    if (u.mode === 'platform') totals.platformRequests++;
    else totals.byokRequests++;
    const day = u.at.slice(0, 10);
    if (!byDay.has(day)) byDay.set(day, zero());
    add(byDay.get(day)!, u);
    add((byProvider[u.provider] ??= zero()), u);
    add((byModel[`${u.provider}/${u.model}`] ??= zero()), u);
  }
  return {
    period: { days: opts.days, startDate: start.toISOString(), endDate: end.toISOString() },
    totals,
    byDay: [...byDay.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([date, t]) => ({ date, ...t })),
    byProvider,
    byModel,
    ...(opts.includeHistory ? { history: inWindow.reverse().slice(0, opts.historyLimit) } : {}),
  };
}

/** Lifetime figures for billing.getTokenBalance. */
export function lifetime(entries: LedgerEntry[]): { totalTokensPurchased: number; totalTokensUsed: number; platformFeeCollected: number } {
  let totalTokensPurchased = 0;
  let totalTokensUsed = 0;
  let platformFeeCollected = 0;
  for (const e of entries) {
    if (e.kind === 'credit') totalTokensPurchased += e.lines.reduce((s, l) => s + l.delta, 0);
    if (e.kind === 'settle' && e.usage) {
      totalTokensUsed += e.usage.tokensUsed;
      platformFeeCollected += e.usage.platformFee;
    }
  }
  return { totalTokensPurchased, totalTokensUsed, platformFeeCollected };
}
