import { z } from '../../lib/zod.js';

/** Bounds of list and estimate inputs (the spec leaves them open; see docs/billing.md). */
export const BOUNDS = {
  limit: { min: 1, max: 1000, default: 20 },
  days: { min: 1, max: 365, default: 30 },
  historyLimit: { min: 1, max: 1000, default: 20 },
  estimatedTokens: { min: 0, max: 10_000_000, default: 1000 },
} as const;

const bounded = (name: keyof typeof BOUNDS) => {
  const b = BOUNDS[name];
  const msg = `${name} must be an integer from ${b.min} to ${b.max}`;
  return z.number({ error: msg }).int(msg).min(b.min, msg).max(b.max, msg);
};

export const limitInput = bounded('limit').default(BOUNDS.limit.default);
export const daysInput = bounded('days').default(BOUNDS.days.default);
export const historyLimitInput = bounded('historyLimit').default(BOUNDS.historyLimit.default);
export const estimatedTokensInput = bounded('estimatedTokens');

/** A paging cursor: the `nextCursor` of the previous page (newest-first lists). */
export const cursorInput = z
  .number({ error: 'cursor must be a nextCursor from a previous page' })
  .int()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .optional();
