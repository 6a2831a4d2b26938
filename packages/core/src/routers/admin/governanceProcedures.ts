import { z } from '../../lib/zod.js';
import { BUDGET_PERIODS, MAX_BUDGET_USD } from '../../config/sections/budget.js';
import { CoreError } from '../../kernel/CoreError.js';
import { adminUsageAnalytics } from '../../services/billing/adminUsageAnalytics.js';
import { adminProcedure } from '../../pipeline/procedures.js';
import type { UserDirectory } from '../../services/directory/UserDirectory.js';
import { adminServices } from './adminServices.js';

/** Longest analytics range in days (a year and a day, so "the last 365 days" plus today fits). */
export const MAX_ANALYTICS_DAYS = 366;

const UserRef = z.string().min(1).max(320).describe('user id (sub) or e-mail');
/**
 * A day that exists: `Date.parse` rolls a day past its month's end over (2026-02-30 is March 2nd),
 * so the day must come back unchanged from the date it parses to.
 */
const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'a UTC day as YYYY-MM-DD')
  .refine((d) => {
    const t = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === d;
  }, 'not a calendar day');

/** A user named by id or by the e-mail the server has seen them with (as admin.getUserInfo). */
async function resolveUser(ctx: { users: Pick<UserDirectory, 'find'> }, ref: string): Promise<string> {
  const { sub } = await ctx.users.find(ref);
  if (sub === ref && ref.includes('@'))
    throw new CoreError('NOT_FOUND', `no user with e-mail "${ref.slice(0, 320)}" is known to this server; name them by id`);
  return sub;
}

/**
 * Spend governance for administrators: per-user budgets (set, read, remove) and usage analytics
 * across users. Spread into the admin router.
 */
/** An administrator, with the admin services in ctx. */
const adminNamespace = adminProcedure.use(adminServices);

export const governanceProcedures = {
  setBudget: adminNamespace
    .meta({
      description: "Set a user's budget for one period (daily or monthly, UTC): hard limits in tokens and/or USD and soft alert thresholds",
    })
    .input(
      z.lazy(() =>
        z.strictObject({
          userId: UserRef,
          period: z.enum(BUDGET_PERIODS),
          tokens: z
            .number()
            .int()
            .min(0)
            .max(Number.MAX_SAFE_INTEGER)
            .optional()
            .describe('tokens the model may use in the period (platform-paid calls, fee excluded)'),
          usd: z.number().min(0).max(MAX_BUDGET_USD).optional().describe('USD the platform may pay the providers in the period'),
          thresholds: z
            .array(z.number().gt(0).max(1))
            .max(10)
            .optional()
            .describe('fractions of each limit that send a budgetThreshold alert; default [0.8]'),
        }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const { userId: ref, period, ...limits } = input;
      const userId = await resolveUser(ctx, ref);
      const view = await ctx.billing.budgets.set(userId, period, limits, ctx.identity.sub);
      ctx.logger.info('billing: budget set', { by: ctx.identity.sub, userId, period, tokens: limits.tokens, usd: limits.usd });
      return view;
    }),

  getBudget: adminNamespace
    .meta({ description: "A user's budget per period with spend, reserved and remaining figures and the reset time" })
    .input(z.lazy(() => z.strictObject({ userId: UserRef })))
    .query(async ({ ctx, input }) => ctx.billing.budgets.view(await resolveUser(ctx, input.userId))),

  removeBudget: adminNamespace
    .meta({ description: "Remove a user's own budget for one period or both (the default budget applies again)" })
    .input(z.lazy(() => z.strictObject({ userId: UserRef, period: z.enum(BUDGET_PERIODS).optional() })))
    .mutation(async ({ ctx, input }) => {
      const userId = await resolveUser(ctx, input.userId);
      const removed = await ctx.billing.budgets.remove(userId, input.period, ctx.identity.sub);
      ctx.logger.info('billing: budget removed', { by: ctx.identity.sub, userId, period: input.period ?? 'all', removed });
      return { removed, budget: await ctx.billing.budgets.view(userId) };
    }),

  usageAnalytics: adminNamespace
    .meta({
      description:
        'Usage across users: totals, per day, top providers, models and users by cost or tokens (from maintained day rows, the same on every instance)',
    })
    .input(
      z.lazy(() =>
        z
          .strictObject({
            days: z
              .number()
              .int()
              .min(1)
              .max(MAX_ANALYTICS_DAYS)
              .default(30)
              .describe('the last N UTC days, today included (ignored with from)'),
            from: Day.optional().describe('first UTC day (inclusive)'),
            to: Day.optional().describe('last UTC day (inclusive); default today'),
            groupBy: z.enum(['user', 'provider', 'model', 'day']).optional().describe('only this grouping; default all'),
            sortBy: z.enum(['cost', 'tokens']).default('cost').describe('rank by platform cost in USD or by tokens'),
            limit: z.number().int().min(1).max(100).default(10).describe('rows per grouping (days are never cut)'),
          })
          .default({ days: 30, sortBy: 'cost', limit: 10 }),
      ),
    )
    .query(({ ctx, input }) => {
      const to = input.to ?? new Date().toISOString().slice(0, 10);
      const from = input.from ?? new Date(Date.parse(`${to}T00:00:00Z`) - (input.days - 1) * 86_400_000).toISOString().slice(0, 10);
      const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000 + 1;
      if (span < 1) throw new CoreError('INVALID_PARAMS', 'from must not be after to');
      if (span > MAX_ANALYTICS_DAYS) throw new CoreError('INVALID_PARAMS', `the range may span at most ${MAX_ANALYTICS_DAYS} days`);
      return adminUsageAnalytics(ctx.storage, { from, to, groupBy: input.groupBy, sortBy: input.sortBy, limit: input.limit });
    }),
};
