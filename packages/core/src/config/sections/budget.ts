import { z } from '../../lib/zod.js';

// Built on first use (z.lazy), like the config sections: a start-up that names no budget builds none.

/** Budget periods: UTC calendar days and UTC calendar months. */
export const BUDGET_PERIODS = ['daily', 'monthly'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Largest money limit accepted, in USD (far above any real budget; keeps micro-dollars exact). */
export const MAX_BUDGET_USD = 1_000_000_000;

/**
 * The limits of one period. Both limits are hard: a platform-paid call whose worst case would take
 * the period's spend over either is refused before it runs. Neither set means "no limit" (an
 * administrator can exempt one user from the default budget that way).
 */
export const BudgetLimitsSchema = z.lazy(() =>
  z.strictObject({
    /** Tokens the model may use in the period (platform-paid calls; the platform fee is not counted). */
    tokens: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Money the platform may pay the providers in the period, in USD, at the pricing table's prices. */
    usd: z.number().min(0).max(MAX_BUDGET_USD).optional(),
    /**
     * Soft thresholds as fractions of each limit: the first settled call that reaches one in a
     * period sends a `budgetThreshold` alert (once per user, period, limit and threshold). Default [0.8].
     */
    thresholds: z
      .array(z.number().gt(0).max(1))
      .max(10)
      .default([0.8])
      .transform((t) => [...new Set(t)].sort((a, b) => a - b)),
  }),
);
export type BudgetLimits = z.output<typeof BudgetLimitsSchema>;

/** `billing.defaultBudget`: the budget of every user without their own for that period. Default none. */
export const DefaultBudgetSchema = z
  .lazy(() =>
    z.strictObject({
      daily: BudgetLimitsSchema.optional(),
      monthly: BudgetLimitsSchema.optional(),
    }),
  )
  .prefault({});
