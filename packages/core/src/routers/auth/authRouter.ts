import { KEY_SCOPES } from '../../services/apiKeys/keyScopes.js';
import { z } from '../../lib/zod.js';
import { once } from '../../lib/once.js';
import { CoreError } from '../../kernel/CoreError.js';
import { KeyProviderInput } from '../../services/ai/providerIds.js';
import { NAMED_PROVIDER_ID } from '../../config/sections/aiProviders.js';
import { countKeyCheck } from '../../services/rateLimit/keyCheckLimit.js';
import { rememberUser } from '../../services/directory/userIndex.js';
import { router } from '../../pipeline/init.js';
import { protectedProcedure } from '../../pipeline/procedures.js';
import { authServices } from './authServices.js';
import { ApiKeyInput } from '../user/providerRecord.js';
import { resolveKeyOwner } from './resolveKeyOwner.js';

/**
 * BYOK key storage. Keys are only ever reachable under the caller's own identity (`email` must
 * be the caller's email or sub; administrators may name others), and no procedure returns a
 * key: status only (exists, provider, last four characters, times).
 */
const keyProcedure = protectedProcedure.use(authServices).use(async ({ ctx, next }) => {
  await rememberUser(ctx.storage, ctx.identity, ctx.logger);
  return next();
});

const Email = z.string().trim().min(1, 'email is required').max(320);
const Owner = z.lazy(() => z.object({ email: Email }));
const ownerProvider = once(() => z.object({ email: Email, provider: KeyProviderInput }));
/** A named provider of this server (`ai.providers.<id>` with a `type`); the spec's procedures keep their enum of three. */
const ownerNamedProvider = once(() => z.object({ email: Email, provider: z.string().regex(NAMED_PROVIDER_ID, 'a provider id') }));

/** The named provider must exist and accept callers' own keys (`byok: true`). */
function assertNamedByok(
  ctx: { ai: { providers: { namedType(id: string): unknown; isByokProvider(id: string): boolean } } },
  provider: string,
): void {
  if (ctx.ai.providers.namedType(provider) === undefined) {
    throw new CoreError(
      'BAD_REQUEST',
      `"${provider.slice(0, 50)}" is not a named provider of this server; keys for anthropic, openai and google go through storeUserKey`,
      { details: { reason: 'unknown_provider' } },
    );
  }
  if (!ctx.ai.providers.isByokProvider(provider))
    throw new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, {
      details: { reason: 'byok_not_allowed', provider },
    });
}

export const authRouter = router({
  storeUserKey: keyProcedure
    .meta({ keyAccess: 'none', description: 'Store your API key for a provider (encrypted at rest; never returned)' })
    .input(z.lazy(() => ownerProvider().extend({ apiKey: ApiKeyInput })))
    .mutation(async ({ ctx, input }) => {
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      const status = await ctx.vault.store(owner, input.provider, input.apiKey);
      ctx.logger.info('vault: key stored', { by: ctx.identity.sub, owner, provider: input.provider });
      return { success: true, ...status };
    }),

  getUserKey: keyProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'Status of your stored key for a provider (never the key)' })
    .input(z.lazy(ownerProvider))
    .query(async ({ ctx, input }) => ctx.vault.get(await resolveKeyOwner(ctx, ctx.identity, input.email), input.provider)),

  getUserProviders: keyProcedure
    .meta({ keyAccess: { scope: KEY_SCOPES.accountRead }, description: 'Providers you have stored keys for' })
    .input(Owner)
    .query(async ({ ctx, input }) => ({
      providers: await ctx.vault.providers(await resolveKeyOwner(ctx, ctx.identity, input.email)),
    })),

  rotateUserKey: keyProcedure
    .meta({ keyAccess: 'none', description: 'Replace your stored key for a provider' })
    .input(z.lazy(() => ownerProvider().extend({ newApiKey: ApiKeyInput })))
    .mutation(async ({ ctx, input }) => {
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      const status = await ctx.vault.rotate(owner, input.provider, input.newApiKey);
      ctx.logger.info('vault: key rotated', { by: ctx.identity.sub, owner, provider: input.provider });
      return { success: true, ...status };
    }),

  deleteUserKey: keyProcedure
    .meta({ keyAccess: 'none', description: 'Delete your stored key for a provider' })
    .input(z.lazy(ownerProvider))
    .mutation(async ({ ctx, input }) => {
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      const deleted = await ctx.vault.remove(owner, input.provider);
      if (deleted) ctx.logger.info('vault: key deleted', { by: ctx.identity.sub, owner, provider: input.provider });
      return { success: deleted, provider: input.provider, deleted };
    }),

  storeProviderKey: keyProcedure
    .meta({
      keyAccess: 'none',
      description: 'Store your API key for a named provider of this server that accepts own keys (encrypted at rest; never returned)',
    })
    .input(z.lazy(() => ownerNamedProvider().extend({ apiKey: ApiKeyInput })))
    .mutation(async ({ ctx, input }) => {
      assertNamedByok(ctx, input.provider);
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      const status = await ctx.vault.store(owner, input.provider, input.apiKey);
      ctx.logger.info('vault: key stored', { by: ctx.identity.sub, owner, provider: input.provider });
      return { success: true, ...status };
    }),

  deleteProviderKey: keyProcedure
    .meta({ keyAccess: 'none', description: 'Delete your stored key for a named provider' })
    .input(z.lazy(ownerNamedProvider))
    .mutation(async ({ ctx, input }) => {
      if (ctx.ai.providers.namedType(input.provider) === undefined) assertNamedByok(ctx, input.provider);
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      const deleted = await ctx.vault.remove(owner, input.provider);
      if (deleted) ctx.logger.info('vault: key deleted', { by: ctx.identity.sub, owner, provider: input.provider });
      return { success: deleted, provider: input.provider, deleted };
    }),

  validateUserKey: keyProcedure
    .meta({ keyAccess: 'none', description: 'Check your stored key with a real, token-free request to the provider' })
    .input(z.lazy(ownerProvider))
    .mutation(async ({ ctx, input }) => {
      const owner = await resolveKeyOwner(ctx, ctx.identity, input.email);
      await countKeyCheck(ctx.keyChecks, ctx.identity, ctx.req.ip);
      const apiKey = await ctx.vault.reveal(owner, input.provider);
      if (apiKey === undefined) throw new CoreError('NOT_FOUND', `no ${input.provider} key is stored for this user`);
      const check = await ctx.ai.validateProvider(input.provider, apiKey, ctx.req.signal);
      const status = check.valid ? await ctx.vault.markValidated(owner, input.provider) : undefined;
      return { ...check, ...(status?.validatedAt ? { validatedAt: status.validatedAt } : {}) };
    }),
});
