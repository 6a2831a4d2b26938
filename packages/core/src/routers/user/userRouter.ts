import { KEY_SCOPES } from '../../services/apiKeys/keyScopes.js';
import { z } from '../../lib/zod.js';
import { KEY_PROVIDER_IDS, KeyProviderInput } from '../../services/ai/providerIds.js';
import type { UserPreferences } from '../../services/billing/PreferencesStore.js';
import type { AiService } from '../../services/ai/AiService.js';
import type { KeyVault } from '../../services/vault/KeyVault.js';
import { rememberUser } from '../../services/directory/userIndex.js';
import { router } from '../../pipeline/init.js';
import { protectedProcedure } from '../../pipeline/procedures.js';
import { userServices } from './userServices.js';
import { estimatedTokensInput } from '../billing/bounds.js';
import { previewModelInput, previewPlan } from '../billing/previewPlan.js';
import { ApiKeyInput, providerRecord } from './providerRecord.js';

/** Every user.* procedure works on the caller's own profile, so all need an identity. */
const userProcedure = protectedProcedure.use(userServices).use(async ({ ctx, next }) => {
  await rememberUser(ctx.storage, ctx.identity, ctx.logger);
  return next();
});

const ConsumptionOrderInput = z
  .array(z.enum(['subscription', 'one_time', 'byok']))
  .min(1)
  .max(3)
  .refine((a) => new Set(a).size === a.length, 'consumptionOrder must not repeat an entry');

const ByokProvidersInput = providerRecord(z.object({ enabled: z.boolean(), apiKey: ApiKeyInput.optional() }));

type UserCtx = { ai: AiService; vault: KeyVault; identity: { sub: string } };

type ProviderSettings = Partial<Record<string, { enabled: boolean; apiKey?: string | undefined }>>;

/** Store given keys in the vault and return the per-provider switches for the preferences. */
async function applyProviders(ctx: UserCtx, providers: ProviderSettings) {
  const switches: UserPreferences['byokProviders'] = {};
  const keysStored: string[] = [];
  for (const [provider, setting] of Object.entries(providers)) {
    if (!setting) continue;
    if (setting.apiKey) {
      await ctx.vault.store(ctx.identity.sub, provider, setting.apiKey);
      keysStored.push(provider);
    }
    switches[provider] = { enabled: setting.enabled };
  }
  return { switches, keysStored };
}

async function byokStatus(ctx: UserCtx, prefs: UserPreferences) {
  const providers: Record<
    string,
    { enabled: boolean; hasApiKey: boolean; last4?: string | null; createdAt?: string; rotatedAt?: string; validatedAt?: string }
  > = {};
  // The spec's three, then the named providers that accept own keys (auth.storeProviderKey).
  const named = ctx.ai.providers.ids().filter((id) => ctx.ai.providers.namedType(id) !== undefined && ctx.ai.providers.isByokProvider(id));
  for (const provider of [...KEY_PROVIDER_IDS, ...named]) {
    const { exists, provider: _p, ...status } = await ctx.vault.get(ctx.identity.sub, provider);
    const enabled = prefs.byokProviders[provider]?.enabled ?? exists;
    if (exists || prefs.byokProviders[provider]) providers[provider] = { enabled, hasApiKey: exists, ...status };
  }
  return {
    byokEnabled: prefs.byokEnabled,
    providers,
    hasConfiguredProviders: Object.values(providers).some((p) => p.enabled && p.hasApiKey),
  };
}

export const userRouter = router({
  checkRequestEligibility: userProcedure
    .meta({
      keyAccess: 'any',
      description: 'Whether you can make an AI request now: tokens for server-paid calls within your budget, or an API key',
      mcp: { annotations: { readOnlyHint: true } },
    })
    .input(
      z.lazy(() =>
        z
          .object({
            estimatedTokens: estimatedTokensInput.default(1000),
            hasApiKey: z.boolean().default(false),
            provider: KeyProviderInput.optional(),
            model: previewModelInput,
          })
          .default({ estimatedTokens: 1000, hasApiKey: false }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const plan = await previewPlan(ctx, ctx.identity.sub, input);
      const reason =
        plan.payer === 'platform'
          ? 'sufficient token balance'
          : plan.payer === 'byok'
            ? plan.plan[0]!.reason
            : plan.platformRefusedBy === 'budget'
              ? plan.notifications[0]!
              : 'insufficient platform tokens and no provider API key';
      return {
        canMakeRequest: plan.viable,
        reason,
        mode: plan.payer,
        tokenBalance: plan.balances.subscription + plan.balances.one_time,
        estimatedCost: plan.totalTokensNeeded,
        requiresApiKey: plan.payer === 'none',
        /** The refusal your budget gives a platform-paid call of this size now (null: within budget). */
        budget: plan.budget,
      };
    }),

  configureBYOK: userProcedure
    .meta({ keyAccess: 'none', description: 'Enable BYOK and store provider keys server-side (encrypted); keys are never returned' })
    .input(z.lazy(() => z.object({ providers: ByokProvidersInput, enabled: z.boolean().default(true) })))
    .mutation(async ({ ctx, input }) => {
      const { switches, keysStored } = await applyProviders(ctx, input.providers);
      const prefs = await ctx.billing.preferences.update(ctx.identity.sub, { byokEnabled: input.enabled, byokProviders: switches });
      return {
        success: true,
        byokEnabled: prefs.byokEnabled,
        providersConfigured: Object.entries(switches)
          .filter(([, s]) => s.enabled)
          .map(([p]) => p),
        keysStored,
      };
    }),

  getBYOKStatus: userProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'BYOK status per provider, without the keys' })
    .query(async ({ ctx }) => byokStatus(ctx, await ctx.billing.preferences.get(ctx.identity.sub))),

  getUserProfile: userProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'Your profile: capabilities and consumption preferences' })
    .query(async ({ ctx }) => {
      const userId = ctx.identity.sub;
      const [prefs, balances] = await Promise.all([ctx.billing.preferences.get(userId), ctx.billing.balances(userId)]);
      const byok = await byokStatus(ctx, prefs);
      return {
        userId,
        ...(ctx.identity.email ? { email: ctx.identity.email } : {}),
        isAdmin: ctx.identity.isAdmin,
        capabilities: {
          platformTokens: balances.subscription + balances.one_time > 0,
          byok: byok.byokEnabled && byok.hasConfiguredProviders,
          byokProviders: Object.entries(byok.providers)
            .filter(([, p]) => p.enabled && p.hasApiKey)
            .map(([p]) => p),
        },
        balances,
        preferences: prefs,
      };
    }),

  getUserStatus: userProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'Subscription vs BYOK status and purchase history' })
    .query(async ({ ctx }) => {
      const userId = ctx.identity.sub;
      const [prefs, account, recent] = await Promise.all([
        ctx.billing.preferences.get(userId),
        ctx.billing.account(userId),
        ctx.billing.purchaseHistory(userId, { type: 'all', limit: 10 }),
      ]);
      const balances = { subscription: account.subscription, one_time: account.one_time };
      const hasSubscription = account.subscriptionPurchases > 0;
      const byok = await byokStatus(ctx, prefs);
      const platform = balances.subscription + balances.one_time > 0;
      return {
        userId,
        userType: platform
          ? hasSubscription
            ? 'subscription'
            : 'one_time'
          : byok.byokEnabled && byok.hasConfiguredProviders
            ? 'byok'
            : 'none',
        hasSubscription,
        hasPurchases: account.purchases > 0,
        totalPurchases: account.purchases,
        totalTokensPurchased: account.purchased,
        balances,
        byokEnabled: byok.byokEnabled,
        recentPurchases: recent.items,
      };
    }),

  updateUserPreferences: userProcedure
    .meta({ keyAccess: 'none', description: 'Update consumption order, BYOK switches and notification preferences' })
    .input(
      z.lazy(() =>
        z.object({
          consumptionOrder: ConsumptionOrderInput.optional(),
          byokEnabled: z.boolean().optional(),
          byokProviders: ByokProvidersInput.optional(),
          notifyTokenLowThreshold: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
          notifyFallbackToByok: z.boolean().optional(),
          notifyOneTimeConsumed: z.boolean().optional(),
        }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const { byokProviders, ...rest } = input;
      const update: Parameters<typeof ctx.billing.preferences.update>[1] = {};
      for (const [k, v] of Object.entries(rest)) if (v !== undefined) Object.assign(update, { [k]: v });
      if (byokProviders) update.byokProviders = (await applyProviders(ctx, byokProviders)).switches;
      const preferences = await ctx.billing.preferences.update(ctx.identity.sub, update);
      return { success: true, preferences };
    }),
});
