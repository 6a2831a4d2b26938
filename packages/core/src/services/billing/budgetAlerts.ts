import type { TxWrite } from '../../kernel/Storage.js';
import type { BudgetCrossing, BudgetRefusal } from '../spend/periodSpend.js';
import type { BudgetAlertSink } from './types.js';

const enc = encodeURIComponent;

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
