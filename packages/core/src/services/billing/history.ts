import type { Storage } from '../../kernel/Storage.js';
import { ledgerKeys } from './Ledger.js';
import type { BalanceType, PurchaseItem } from './types.js';

export type { PurchaseItem };

/**
 * Read-side views of a user's billing. Every list reads its own log newest first through the
 * (log, seq) index, `limit` items from a cursor, so its cost does not depend on how long the
 * user's history is; analytics read one maintained row per day.
 */

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
  /** The API key the call was made with (docs/api-keys.md). */
  apiKeyId?: string;
}

/** A usage log record: the item plus what paid for it (net of the hold's refund). */
export interface UsageRecordItem extends UsageItem {
  paidBy: Partial<Record<BalanceType, number>> | 'byok';
}

export interface Page<T> {
  items: T[];
  /** Pass as `cursor` for the next (older) page; absent on the last page. */
  nextCursor?: number;
}

export interface PageOptions {
  limit: number;
  /** From a previous page's nextCursor. */
  cursor?: number | undefined;
}

/**
 * One page, and a cursor only when an older record exists: one record past the page is read to
 * know. (Guessing from the page being full led to an empty last page whenever the records before
 * it were gone: a log that retention trimmed does not start at seq 1.)
 */
async function page<T>(storage: Storage, log: string, opts: PageOptions): Promise<Page<T>> {
  const rows = await storage.readLog<T>(log, {
    newestFirst: true,
    limit: opts.limit + 1,
    ...(opts.cursor !== undefined ? { before: opts.cursor } : {}),
  });
  const items = rows.slice(0, opts.limit);
  return { items: items.map((r) => r.record), ...(rows.length > opts.limit ? { nextCursor: items.at(-1)!.seq } : {}) };
}

export function purchases(
  storage: Storage,
  userId: string,
  opts: PageOptions & { type: 'all' | BalanceType },
): Promise<Page<PurchaseItem>> {
  return page(storage, ledgerKeys.purchases(userId, opts.type === 'all' ? undefined : opts.type), opts);
}

/** Every finished call, platform-paid or BYOK, newest first. */
export async function usage(storage: Storage, userId: string, opts: PageOptions): Promise<Page<UsageItem>> {
  const p = await page<UsageRecordItem>(storage, ledgerKeys.usage(userId), opts);
  return { ...p, items: p.items.map(({ paidBy: _paidBy, ...item }) => item) };
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

/** Which balance paid for each call, newest first. */
export async function consumption(storage: Storage, userId: string, opts: PageOptions): Promise<Page<ConsumptionItem>> {
  const p = await page<UsageRecordItem>(storage, ledgerKeys.usage(userId), opts);
  return {
    ...p,
    items: p.items.map((u) => ({
      requestId: u.requestId ?? u.id,
      at: u.at,
      paidBy: u.paidBy,
      tokensCharged: u.tokensCharged,
      platformFee: u.platformFee,
      provider: u.provider,
      model: u.model,
    })),
  };
}

export interface Totals {
  requests: number;
  tokensUsed: number;
  tokensCharged: number;
  platformFee: number;
  estimatedCostUsd: number;
}

/** The maintained row of one user and UTC day, updated in the transaction that records a call. */
export interface UsageDay {
  totals: Totals & { platformRequests: number; byokRequests: number };
  byProvider: Record<string, Totals>;
  byModel: Record<string, Totals>;
  /** Platform-paid and BYOK calls apart (rows written before costs were recorded lack it). */
  byMode?: { platform: Totals; byok: Totals };
}

/** Day rows are kept a little longer than the longest analytics window (365 days). */
export const USAGE_DAY_TTL_MS = 400 * 86_400_000;

export const zero = (): Totals => ({ requests: 0, tokensUsed: 0, tokensCharged: 0, platformFee: 0, estimatedCostUsd: 0 });

export function add(t: Totals, u: Totals): void {
  t.requests += u.requests;
  t.tokensUsed += u.tokensUsed;
  t.tokensCharged += u.tokensCharged;
  t.platformFee += u.platformFee;
  // Rounded so a long sum of float costs shows no noise (1e-10 USD is far below any price step).
  t.estimatedCostUsd = Math.round((t.estimatedCostUsd + u.estimatedCostUsd) * 1e10) / 1e10;
}

const one = (u: UsageItem): Totals => ({
  requests: 1,
  tokensUsed: u.tokensUsed,
  tokensCharged: u.tokensCharged,
  platformFee: u.platformFee,
  estimatedCostUsd: u.estimatedCostUsd ?? 0,
});

/** `prev` plus `t`, as a new object (`prev` is left as it is). */
function plus(prev: Totals | undefined, t: Totals): Totals {
  const next = prev ? { ...prev } : zero();
  add(next, t);
  return next;
}

/**
 * The day row after recording `u` (pure: used inside transactions). Copies only what it changes:
 * the totals and the provider, model and mode entries of `u`; the rest of the row (a global row's
 * `top` lists, the other models) is shared with `day`, so a row that grows with the day's models
 * is not cloned whole on every call.
 */
export function addToDay(day: UsageDay | undefined, u: UsageItem): UsageDay {
  const next: UsageDay = day
    ? { ...day, totals: { ...day.totals }, byProvider: { ...day.byProvider }, byModel: { ...day.byModel } }
    : { totals: { ...zero(), platformRequests: 0, byokRequests: 0 }, byProvider: {}, byModel: {} };
  const t = one(u);
  add(next.totals, t);
  if (u.mode === 'platform') next.totals.platformRequests++;
  else next.totals.byokRequests++;
  next.byProvider[u.provider] = plus(next.byProvider[u.provider], t);
  const model = `${u.provider}/${u.model}`;
  next.byModel[model] = plus(next.byModel[model], t);
  const byMode = next.byMode ? { ...next.byMode } : { platform: zero(), byok: zero() };
  byMode[u.mode] = plus(next.byMode?.[u.mode], t);
  next.byMode = byMode;
  return next;
}

export interface UsageAnalytics {
  period: { days: number; startDate: string; endDate: string };
  totals: Totals & { platformRequests: number; byokRequests: number };
  byDay: Array<{ date: string } & Totals>;
  byProvider: Record<string, Totals>;
  byModel: Record<string, Totals>;
  history?: UsageItem[];
}

/** Totals over the last `days` UTC days (today included), per day, provider and model. */
export async function analytics(
  storage: Storage,
  userId: string,
  opts: { days: number; includeHistory: boolean; historyLimit: number; now?: Date },
): Promise<UsageAnalytics> {
  const end = opts.now ?? new Date();
  const start = new Date(end.getTime() - (opts.days - 1) * 86_400_000);
  const dates: string[] = [];
  for (let t = Date.parse(start.toISOString().slice(0, 10)); t <= end.getTime(); t += 86_400_000)
    dates.push(new Date(t).toISOString().slice(0, 10));
  const [rows, recent] = await Promise.all([
    storage.getMany<UsageDay>(dates.map((d) => ledgerKeys.usageDay(userId, d))),
    opts.includeHistory ? usage(storage, userId, { limit: opts.historyLimit }) : undefined,
  ]);
  const totals = { ...zero(), platformRequests: 0, byokRequests: 0 };
  const byProvider: Record<string, Totals> = {};
  const byModel: Record<string, Totals> = {};
  const byDay: UsageAnalytics['byDay'] = [];
  rows.forEach((row, i) => {
    if (!row) return;
    add(totals, row.totals);
    totals.platformRequests += row.totals.platformRequests;
    totals.byokRequests += row.totals.byokRequests;
    const { platformRequests: _p, byokRequests: _b, ...dayTotals } = row.totals;
    byDay.push({ date: dates[i]!, ...dayTotals });
    for (const [k, v] of Object.entries(row.byProvider)) add((byProvider[k] ??= zero()), v);
    for (const [k, v] of Object.entries(row.byModel)) add((byModel[k] ??= zero()), v);
  });
  const startDate = `${dates[0]}T00:00:00.000Z`;
  return {
    period: { days: opts.days, startDate, endDate: end.toISOString() },
    totals,
    byDay,
    byProvider,
    byModel,
    ...(recent ? { history: recent.items.filter((u) => u.at >= startDate) } : {}),
  };
}
