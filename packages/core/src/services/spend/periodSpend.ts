import { BUDGET_PERIODS, type BudgetLimits, type BudgetPeriod } from '../../config/sections/budget.js';

/**
 * The pure arithmetic of budgets, run inside the reserve / settle / release transactions.
 *
 * Money is counted in integer nano-dollars (1 USD = 1,000,000,000) so sums never drift and a
 * comparison with the limit is exact; costs are rounded up, so the figure never understates.
 * Nano, not micro: a call's cost is usually a fraction of a micro-dollar off a whole number
 * ($0.00012125), and rounding each call up to micros made a limit of exactly N calls' cost admit
 * N-1. Per-token prices given to 3 decimals per million tokens are whole nano-dollars.
 * A call counts against the periods in which it was reserved: the check at reservation and the
 * charge at settle hit the same period, even for a call that runs across midnight UTC.
 */

export const USD_NANOS = 1_000_000_000;
export const toNanos = (usd: number) => Math.ceil(Math.round(usd * USD_NANOS * 1000) / 1000);
export const fromNanos = (micros: number) => micros / USD_NANOS;

/** Which limit of a budget. */
export type BudgetMetric = 'tokens' | 'usd';

/** The effective budget of a user: per period, the user's own limits or the default's. */
export type EffectiveBudget = Partial<Record<BudgetPeriod, BudgetLimits & { source: 'user' | 'default' }>>;

/** Spend of one period: settled calls plus the worst case of calls still running. */
export interface PeriodSpend {
  /** `2026-11-23` (daily) or `2026-11` (monthly). */
  id: string;
  tokens: number;
  usdNanos: number;
  reservedTokens: number;
  reservedUsdNanos: number;
  /** Alerts already sent this period: `tokens:0.8`, `usd:exceeded`, ... */
  alerted: string[];
}

/** `budgetspend:<user>`: the current day and month. Maintained for every user, with or without a budget. */
export type SpendRecord = Partial<Record<BudgetPeriod, PeriodSpend>>;

/** What a reservation added to its periods' reserved figures (kept on the reservation). */
export interface BudgetHold {
  daily: string;
  monthly: string;
  tokens: number;
  usdNanos: number;
}

/** The worst case of a call about to run. `usdNanos` null: the model has no price. */
export interface Worst {
  tokens: number;
  usdNanos: number | null;
}

export function periodIds(at: Date): Record<BudgetPeriod, string> {
  const iso = at.toISOString();
  return { daily: iso.slice(0, 10), monthly: iso.slice(0, 7) };
}

/** When the period `id` ends (the next period starts), ISO time. */
export function resetsAt(period: BudgetPeriod, id: string): string {
  if (period === 'daily') return new Date(Date.parse(`${id}T00:00:00.000Z`) + 86_400_000).toISOString();
  const [y, m] = id.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 1)).toISOString();
}

const fresh = (id: string): PeriodSpend => ({ id, tokens: 0, usdNanos: 0, reservedTokens: 0, reservedUsdNanos: 0, alerted: [] });

/** A period written before money was counted in nano-dollars (`usdMicros` fields): converted on read. */
type LegacyPeriodSpend = PeriodSpend & { usdMicros?: number; reservedUsdMicros?: number };

function upgrade(s: LegacyPeriodSpend): PeriodSpend {
  const { usdMicros, reservedUsdMicros, ...rest } = s;
  return {
    ...rest,
    usdNanos: s.usdNanos ?? (usdMicros ?? 0) * 1000,
    reservedUsdNanos: s.reservedUsdNanos ?? (reservedUsdMicros ?? 0) * 1000,
    alerted: [...s.alerted],
  };
}

/**
 * Which period a record is in: the clock's (`now`), unless the record is already in the next one.
 * Periods never go back: a clock set back across midnight (or an instance whose clock is behind
 * another's) would otherwise start "yesterday" afresh at zero, a whole budget again, and the
 * clock's return would start "today" afresh once more, its spend forgotten. A record further
 * ahead than the next period was written by a clock far off (a VM resumed with a wrong date): it
 * is not believed, or every later call would count in that one period until its date came and
 * the budget would never reset. Ids are ISO dates (`2026-11-23`, `2026-11`), so their text order
 * is their time order. `period` undefined: an id without time (an API key's `total`).
 */
export function periodNow(storedId: string | undefined, now: string, period: BudgetPeriod | undefined): string {
  if (storedId === undefined || storedId <= now || period === undefined) return now;
  const next = resetsAt(period, now).slice(0, period === 'daily' ? 10 : 7);
  return storedId <= next ? storedId : now;
}

/** The record's figures for the periods of `ids` (a period that has ended starts again from zero; see periodNow). */
export function currentSpend(stored: SpendRecord | undefined, ids: Record<BudgetPeriod, string>): Record<BudgetPeriod, PeriodSpend> {
  const out = {} as Record<BudgetPeriod, PeriodSpend>;
  for (const p of BUDGET_PERIODS) {
    const id = periodNow(stored?.[p]?.id, ids[p], p);
    out[p] = stored?.[p]?.id === id ? upgrade(stored[p]!) : fresh(id);
  }
  return out;
}

/** Why a reservation is refused: the first limit it would break. */
export interface BudgetRefusal {
  period: BudgetPeriod;
  periodId: string;
  metric: BudgetMetric;
  /** In tokens, or in USD for `usd`. */
  limit: number;
  spent: number;
  reserved: number;
  requested: number | null;
  resetsAt: string;
  /** 'model_not_priced': a money limit applies and the model has no price, so the cost has no bound. */
  reason: 'budget_exceeded' | 'model_not_priced';
}

/** Whether any period of `budget` has a money (USD) limit. */
export function hasUsdLimit(budget: EffectiveBudget): boolean {
  return BUDGET_PERIODS.some((p) => budget[p]?.usd !== undefined);
}

/**
 * The first limit a call's worst case would break in the periods `spend` holds, or null:
 * `spent + reserved + worst > limit` refuses. The one rule both the reservation (reserveSpend,
 * in its transaction) and the previews (billing.planConsumption, user.checkRequestEligibility)
 * apply, so a preview can never say yes to a call the reservation refuses, or the reverse,
 * for the same figures.
 */
export function budgetRefusal(spend: Record<BudgetPeriod, PeriodSpend>, budget: EffectiveBudget, worst: Worst): BudgetRefusal | null {
  for (const period of BUDGET_PERIODS) {
    const limits = budget[period];
    if (!limits) continue;
    const s = spend[period];
    const base = { period, periodId: s.id, resetsAt: resetsAt(period, s.id) };
    if (limits.tokens !== undefined && s.tokens + s.reservedTokens + worst.tokens > limits.tokens) {
      return {
        ...base,
        metric: 'tokens',
        limit: limits.tokens,
        spent: s.tokens,
        reserved: s.reservedTokens,
        requested: worst.tokens,
        reason: 'budget_exceeded',
      };
    }
    if (limits.usd !== undefined) {
      const limit = toNanos(limits.usd);
      if (worst.usdNanos === null || s.usdNanos + s.reservedUsdNanos + worst.usdNanos > limit) {
        return {
          ...base,
          metric: 'usd',
          limit: limits.usd,
          spent: fromNanos(s.usdNanos),
          reserved: fromNanos(s.reservedUsdNanos),
          requested: worst.usdNanos === null ? null : fromNanos(worst.usdNanos),
          reason: worst.usdNanos === null ? 'model_not_priced' : 'budget_exceeded',
        };
      }
    }
  }
  return null;
}

/** What reserveSpend would answer for a call now, without holding anything (the previews). */
export function previewSpend(stored: SpendRecord | undefined, budget: EffectiveBudget, worst: Worst, at: Date): BudgetRefusal | null {
  return budgetRefusal(currentSpend(stored, periodIds(at)), budget, worst);
}

/**
 * Add a call's worst case to the reserved figures of the current day and month, or say which
 * limit it would break (budgetRefusal).
 */
export function reserveSpend(
  stored: SpendRecord | undefined,
  budget: EffectiveBudget,
  worst: Worst,
  at: Date,
): { ok: true; spend: SpendRecord; hold: BudgetHold } | { ok: false; refusal: BudgetRefusal; spend: Record<BudgetPeriod, PeriodSpend> } {
  const spend = currentSpend(stored, periodIds(at));
  const refusal = budgetRefusal(spend, budget, worst);
  if (refusal) return { ok: false, spend, refusal };
  const usd = worst.usdNanos ?? 0;
  for (const p of BUDGET_PERIODS) {
    spend[p].reservedTokens += worst.tokens;
    spend[p].reservedUsdNanos += usd;
  }
  return { ok: true, spend, hold: { daily: spend.daily.id, monthly: spend.monthly.id, tokens: worst.tokens, usdNanos: usd } };
}

/** A threshold (or the limit) reached for the first time in a period: one alert. */
export interface BudgetCrossing {
  period: BudgetPeriod;
  periodId: string;
  metric: BudgetMetric;
  threshold: number;
  limit: number;
  spent: number;
  resetsAt: string;
}

/** Take a hold off the reserved figures of its periods (when they are still the current ones). */
function unhold(spend: Record<BudgetPeriod, PeriodSpend>, hold: BudgetHold | undefined): void {
  if (!hold) return;
  for (const p of BUDGET_PERIODS) {
    if (spend[p].id !== hold[p]) continue; // that period has ended: its figures are gone
    spend[p].reservedTokens = Math.max(0, spend[p].reservedTokens - hold.tokens);
    // A hold taken before the nano-dollar change carries usdMicros.
    const held = hold.usdNanos ?? ((hold as { usdMicros?: number }).usdMicros ?? 0) * 1000;
    spend[p].reservedUsdNanos = Math.max(0, spend[p].reservedUsdNanos - held);
  }
}

/**
 * Replace a hold with what the call used, and list the thresholds this charge reached first.
 * The charge goes to the hold's periods (to the current ones for a hold without budget figures);
 * a period that has ended since the call was reserved is closed and not charged.
 */
export function settleSpend(
  stored: SpendRecord | undefined,
  budget: EffectiveBudget,
  hold: BudgetHold | undefined,
  actual: { tokens: number; usdNanos: number },
  at: Date,
): { spend: SpendRecord; crossings: BudgetCrossing[] } {
  const spend = currentSpend(stored, periodIds(at));
  unhold(spend, hold);
  const crossings: BudgetCrossing[] = [];
  for (const period of BUDGET_PERIODS) {
    const s = spend[period];
    if (hold && hold[period] !== s.id) continue;
    s.tokens += actual.tokens;
    s.usdNanos += actual.usdNanos;
    const limits = budget[period];
    if (!limits) continue;
    const figures: Array<[BudgetMetric, number | undefined, number, number]> = [
      ['tokens', limits.tokens, limits.tokens ?? 0, s.tokens],
      ['usd', limits.usd, limits.usd === undefined ? 0 : toNanos(limits.usd), s.usdNanos],
    ];
    for (const [metric, shown, limit, spent] of figures) {
      if (shown === undefined || limit === 0) continue;
      for (const t of limits.thresholds) {
        const mark = `${metric}:${t}`;
        if (spent < t * limit || s.alerted.includes(mark)) continue;
        s.alerted.push(mark);
        crossings.push({
          period,
          periodId: s.id,
          metric,
          threshold: t,
          limit: shown,
          spent: metric === 'usd' ? fromNanos(spent) : spent,
          resetsAt: resetsAt(period, s.id),
        });
      }
    }
  }
  return { spend, crossings };
}

/** Give a hold back (the call failed or was abandoned). */
export function releaseSpend(stored: SpendRecord | undefined, hold: BudgetHold | undefined, at: Date): SpendRecord {
  const spend = currentSpend(stored, periodIds(at));
  unhold(spend, hold);
  return spend;
}
