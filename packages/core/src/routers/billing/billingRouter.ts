import { KEY_SCOPES } from '../../services/apiKeys/keyScopes.js';
import { z } from '../../lib/zod.js';
import { BALANCE_TYPES } from '../../services/billing/types.js';
import { router } from '../../pipeline/init.js';
import { adminProcedure, protectedProcedure } from '../../pipeline/procedures.js';
import { billingServices } from './billingServices.js';
import { KeyProviderInput } from '../../services/ai/providerIds.js';
import { previewModelInput, previewPlan } from './previewPlan.js';
import { cursorInput, daysInput, estimatedTokensInput, historyLimitInput, limitInput } from './bounds.js';

const readOnly = { readOnlyHint: true } as const;

/** The billing namespace's procedures, with the billing services in ctx. */
const billingProcedure = protectedProcedure.use(billingServices);
const billingAdminProcedure = adminProcedure.use(billingServices);

/**
 * Token balances and history of the caller. Every procedure reads per-user data, so all need an
 * identity (the spec requires it for getTokenBalance, getTopupHistory and getUsageHistory; the
 * rest have no meaning without a user). creditTokens is for administrators.
 */
export const billingRouter = router({
  getTokenBalance: billingProcedure
    .meta({ keyAccess: 'any', description: 'Your platform token balance (all types) and lifetime totals', mcp: { annotations: readOnly } })
    .query(async ({ ctx }) => {
      const userId = ctx.identity.sub;
      const a = await ctx.billing.account(userId);
      return {
        virtualTokenBalance: a.subscription + a.one_time,
        balances: { subscription: a.subscription, one_time: a.one_time },
        totalTokensPurchased: a.purchased,
        totalTokensUsed: a.used,
        platformFeeCollected: a.fee,
      };
    }),

  getUserTokenBalances: billingProcedure
    .meta({ keyAccess: 'any', description: 'Your token balances per type (subscription, one-time)', mcp: { annotations: readOnly } })
    .query(async ({ ctx }) => {
      const b = await ctx.billing.balances(ctx.identity.sub);
      return {
        balances: BALANCE_TYPES.map((balanceType) => ({ balanceType, virtualTokenBalance: b[balanceType] })),
        summary: { totalSubscriptionTokens: b.subscription, totalOneTimeTokens: b.one_time, totalTokens: b.subscription + b.one_time },
      };
    }),

  getPurchaseHistory: billingProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'Token purchases and credits, newest first' })
    .input(
      z.lazy(() =>
        z
          .object({ limit: limitInput, type: z.enum(['all', ...BALANCE_TYPES]).default('all'), cursor: cursorInput })
          .default({ limit: 20, type: 'all' }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const { items: purchases, nextCursor } = await ctx.billing.purchaseHistory(ctx.identity.sub, input);
      return {
        purchases,
        ...(nextCursor !== undefined ? { nextCursor } : {}),
        summary: {
          totalPurchases: purchases.length,
          totalTokens: purchases.reduce((s, p) => s + p.tokens, 0),
          subscriptionPurchases: purchases.filter((p) => p.type === 'subscription').length,
          oneTimePurchases: purchases.filter((p) => p.type === 'one_time').length,
        },
      };
    }),

  getTopupHistory: billingProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'One-time token top-ups, newest first' })
    .input(z.lazy(() => z.object({ limit: limitInput, cursor: cursorInput }).default({ limit: 20 })))
    .query(async ({ ctx, input }) => {
      const { items: topups, nextCursor } = await ctx.billing.purchaseHistory(ctx.identity.sub, { ...input, type: 'one_time' });
      return { topups, ...(nextCursor !== undefined ? { nextCursor } : {}) };
    }),

  getUsageHistory: billingProcedure
    .meta({ keyAccess: 'any', description: 'Your AI calls (platform-paid and BYOK), newest first' })
    .input(z.lazy(() => z.object({ limit: limitInput, cursor: cursorInput }).default({ limit: 20 })))
    .query(async ({ ctx, input }) => {
      const { items, nextCursor } = await ctx.billing.usageHistory(ctx.identity.sub, input);
      const usage = withoutOtherKeys(items, ctx.keys.keySeenBy(ctx.identity));
      return { usage, ...(nextCursor !== undefined ? { nextCursor } : {}) };
    }),

  getConsumptionHistory: billingProcedure
    .meta({ keyAccess: 'any', description: 'Which balance (or your own key) paid for each call, newest first' })
    .input(z.lazy(() => z.object({ limit: limitInput, cursor: cursorInput }).default({ limit: 20 })))
    .query(async ({ ctx, input }) => {
      const { items: consumption, nextCursor } = await ctx.billing.consumptionHistory(ctx.identity.sub, input);
      return { consumption, ...(nextCursor !== undefined ? { nextCursor } : {}) };
    }),

  getUsageAnalytics: billingProcedure
    .meta({
      keyAccess: 'any',
      description: 'Usage totals per day, provider and model over the last days, and spend per API key',
      mcp: { annotations: readOnly },
    })
    .input(
      z.lazy(() =>
        z
          .object({ days: daysInput, includeHistory: z.boolean().default(false), historyLimit: historyLimitInput })
          .default({ days: 30, includeHistory: false, historyLimit: 20 }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const only = ctx.keys.keySeenBy(ctx.identity);
      const [analytics, byApiKey] = await Promise.all([
        ctx.billing.usageAnalytics(ctx.identity.sub, input),
        ctx.keys.spendByKey(ctx.identity.sub, only),
      ]);
      const history = analytics.history && { history: withoutOtherKeys(analytics.history, only) };
      return { ...analytics, ...history, byApiKey };
    }),

  planConsumption: billingProcedure
    .meta({
      keyAccess: 'any',
      description:
        'Preview which balance or key would pay for a call and what would remain; a call your budget would refuse is not viable (budget: the refusal)',
      mcp: { annotations: readOnly },
    })
    .input(
      z.lazy(() =>
        z.object({
          estimatedTokens: estimatedTokensInput,
          hasApiKey: z.boolean().default(false),
          provider: KeyProviderInput.optional(),
          model: previewModelInput,
        }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const { prefs: _prefs, ...plan } = await previewPlan(ctx, ctx.identity.sub, input);
      return { estimatedTokens: input.estimatedTokens, ...plan };
    }),

  getBudget: billingProcedure
    .meta({
      keyAccess: 'any',
      description: 'Your budget per period (daily, monthly): limits, spend, reserved, remaining and when it resets',
      mcp: { annotations: readOnly },
    })
    .query(({ ctx }) => ctx.billing.budgets.view(ctx.identity.sub)),

  creditTokens: billingAdminProcedure
    .meta({ description: 'Credit tokens to a user (administrators; idempotent per idempotencyKey)' })
    .input(
      z.lazy(() =>
        z.strictObject({
          userId: z.string().min(1).max(320),
          tokens: z.number().int('tokens must be a whole number').min(1, 'tokens must be at least 1').max(Number.MAX_SAFE_INTEGER),
          type: z.enum(BALANCE_TYPES),
          idempotencyKey: z.string().min(1).max(200),
        }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.billing.credit({ ...input, source: 'admin', note: { by: ctx.identity.sub } });
      ctx.logger.info('billing: admin credit', {
        by: ctx.identity.sub,
        userId: input.userId,
        tokens: input.tokens,
        type: input.type,
        applied: result.applied,
      });
      return { userId: input.userId, type: input.type, ...result };
    }),
});

/**
 * A key without `keys:read` sees only itself among its owner's keys (docs/api-keys.md): on the
 * usage rows it reads, the id of another of its owner's keys is left out.
 */
function withoutOtherKeys<T extends { apiKeyId?: string }>(items: T[], only: string | undefined): T[] {
  if (only === undefined) return items;
  return items.map((r) => {
    if (r.apiKeyId === undefined || r.apiKeyId === only) return r;
    const { apiKeyId: _, ...rest } = r;
    return rest as T;
  });
}
