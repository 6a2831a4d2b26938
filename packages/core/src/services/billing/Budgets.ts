import { BUDGET_PERIODS, BudgetLimitsSchema, type BudgetLimits, type BudgetPeriod } from '../../config/sections/budget.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { Storage, TxWrite } from '../../kernel/Storage.js';
import {
  currentSpend,
  fromNanos,
  periodIds,
  resetsAt,
  USD_NANOS,
  type BudgetCrossing,
  type BudgetRefusal,
  type EffectiveBudget,
  type SpendRecord,
} from '../spend/periodSpend.js';
import type { BudgetAlertSink } from './types.js';

const enc = encodeURIComponent;

export const budgetKeys = {
  /** The user's own budget (set by administrators). */
  budget: (userId: string) => `budget:${enc(userId)}`,
  /** Spend of the current day and month (maintained by reserve, settle and release). */
  spend: (userId: string) => `budgetspend:${enc(userId)}`,
};

/** Spend records outlive the longest period plus the longest hold. */
export const SPEND_TTL_MS = 62 * 86_400_000;

/** `budget:<user>`: per period, limits that replace the default's. */
export interface BudgetRecord {
  daily?: BudgetLimits;
  monthly?: BudgetLimits;
  updatedAt: string;
  updatedBy: string;
}

/** Per period: the user's limits, else the default's, else none. */
export function effectiveBudget(record: BudgetRecord | undefined, defaults: ResolvedConfig['billing']['defaultBudget']): EffectiveBudget {
  const out: EffectiveBudget = {};
  for (const p of BUDGET_PERIODS) {
    const own = record?.[p];
    if (own) out[p] = { ...own, source: 'user' };
    else if (defaults[p]) out[p] = { ...defaults[p], source: 'default' };
  }
  return out;
}

/** What billing.getBudget and admin.getBudget return for one period. */
export interface BudgetPeriodView {
  period: BudgetPeriod;
  periodId: string;
  /** 'user': set by an administrator; 'default': billing.defaultBudget; null: no budget. */
  source: 'user' | 'default' | null;
  limits: { tokens: number | null; usd: number | null };
  thresholds: number[];
  /** Settled platform-paid calls of the period. */
  spent: { tokens: number; usd: number };
  /** Worst case of calls still running. */
  reserved: { tokens: number; usd: number };
  /** Left before the hard limit (null without that limit). */
  remaining: { tokens: number | null; usd: number | null };
  resetsAt: string;
}

export interface BudgetView {
  userId: string;
  periods: BudgetPeriodView[];
}

/**
 * Per-user budgets: the administrator-set records and the read side (limits with current spend).
 * Enforcement is not here: it runs in the reservation's transaction (Reservations, periodSpend).
 */
export class Budgets {
  constructor(
    private readonly storage: Storage,
    private readonly defaults: ResolvedConfig['billing']['defaultBudget'],
  ) {}

  async effective(userId: string): Promise<EffectiveBudget> {
    return effectiveBudget(await this.storage.get<BudgetRecord>(budgetKeys.budget(userId)), this.defaults);
  }

  /** Set (replace) the user's limits of one period. */
  async set(userId: string, period: BudgetPeriod, limits: Partial<BudgetLimits>, by: string): Promise<BudgetView> {
    const parsed = BudgetLimitsSchema.parse(limits);
    const key = budgetKeys.budget(userId);
    await this.storage.transact([key], (read) => {
      const next: BudgetRecord = { ...read<BudgetRecord>(key), [period]: parsed, updatedAt: new Date().toISOString(), updatedBy: by };
      return { writes: [{ op: 'set', key, value: next }], result: undefined };
    });
    return this.view(userId);
  }

  /** Remove the user's own limits of one period or of all (the default applies again). True when something was removed. */
  async remove(userId: string, period: BudgetPeriod | undefined, by: string): Promise<boolean> {
    const key = budgetKeys.budget(userId);
    return this.storage.transact([key], (read) => {
      const cur = read<BudgetRecord>(key);
      const periods = period ? [period] : BUDGET_PERIODS;
      if (!cur || periods.every((p) => !cur[p])) return { writes: [], result: false };
      const next: BudgetRecord = { ...cur, updatedAt: new Date().toISOString(), updatedBy: by };
      for (const p of periods) delete next[p];
      const left = BUDGET_PERIODS.some((p) => next[p]);
      return { writes: [left ? { op: 'set', key, value: next } : { op: 'delete', key }], result: true };
    });
  }

  /** Limits, spend, reservations and reset time of both periods (one round trip). */
  async view(userId: string, now = new Date()): Promise<BudgetView> {
    const [record, stored] = await this.storage.getMany<unknown>([budgetKeys.budget(userId), budgetKeys.spend(userId)]);
    const budget = effectiveBudget(record as BudgetRecord | undefined, this.defaults);
    const spend = currentSpend(stored as SpendRecord | undefined, periodIds(now));
    return {
      userId,
      periods: BUDGET_PERIODS.map((period) => {
        const b = budget[period];
        const s = spend[period];
        const usd = fromNanos(s.usdNanos);
        const reservedUsd = fromNanos(s.reservedUsdNanos);
        const tokens = b?.tokens ?? null;
        const money = b?.usd ?? null;
        return {
          period,
          periodId: s.id,
          source: b?.source ?? null,
          limits: { tokens, usd: money },
          thresholds: b?.thresholds ?? [],
          spent: { tokens: s.tokens, usd },
          reserved: { tokens: s.reservedTokens, usd: reservedUsd },
          remaining: {
            tokens: tokens === null ? null : Math.max(0, tokens - s.tokens - s.reservedTokens),
            usd: money === null ? null : Math.max(0, Math.round((money - usd - reservedUsd) * USD_NANOS) / USD_NANOS),
          },
          resetsAt: resetsAt(period, s.id),
        };
      }),
    };
  }
}

/**
 * Idempotency keys of budget alerts, derived from what makes them unique: a threshold alert once
 * per (user, period, limit, threshold), an exceeded alert once per (user, period, limit). The same
 * event can never get two keys, so a receiver deduplicates on `Idempotency-Key` alone.
 */
export const budgetAlertId = {
  threshold: (userId: string, c: BudgetCrossing) => `budgetThreshold:${enc(userId)}:${c.period}:${c.periodId}:${c.metric}:${c.threshold}`,
  exceeded: (userId: string, r: BudgetRefusal) => `budgetExceeded:${enc(userId)}:${r.period}:${r.periodId}:${r.metric}`,
};

/** Outbox writes for the thresholds a settle reached (none without a sink). */
export function thresholdAlertWrites(sink: BudgetAlertSink | undefined, userId: string, crossings: readonly BudgetCrossing[]): TxWrite[] {
  if (!sink) return [];
  return crossings.flatMap((c) => sink.writesFor('budgetThreshold', { userId, ...c }, budgetAlertId.threshold(userId, c)));
}

/** Outbox writes for a refusal (none without a sink). */
export function exceededAlertWrites(sink: BudgetAlertSink | undefined, userId: string, r: BudgetRefusal): TxWrite[] {
  return sink ? sink.writesFor('budgetExceeded', { userId, ...r }, budgetAlertId.exceeded(userId, r)) : [];
}
