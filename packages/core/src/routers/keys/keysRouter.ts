import { z } from '../../lib/zod.js';
import { keyRulesPatchSchema, keyRulesSchema } from '../../services/apiKeys/apiKeyTypes.js';
import { toView, type KeyActor } from '../../services/apiKeys/ApiKeyService.js';
import type { Identity } from '../../kernel/identity.js';
import type { AnyRouter } from '@trpc/server';
import { once } from '../../lib/once.js';
import { keyScopesOf } from '../../pipeline/accessPolicy.js';
import { router } from '../../pipeline/init.js';
import { adminProcedure, protectedProcedure } from '../../pipeline/procedures.js';
import { keysServices } from './keysServices.js';

// Inputs shared by the user and admin variants; like every built-in schema, built on first use.
const keyId = once(() => z.string().regex(/^[0-9A-Za-z]{12}$/, 'a key id (the 12 characters after aib_)'));
const userId = once(() => z.string().min(1).max(512));
const ListInput = z.lazy(() => z.object({ includeRevoked: z.boolean().default(false) }).default({ includeRevoked: false }));
const KeyInput = z.lazy(() => z.object({ id: keyId() }));
const RotateInput = z.lazy(() =>
  z.object({
    id: keyId(),
    graceSec: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional(),
  }),
);
const UpdateInput = z.lazy(() => keyRulesPatchSchema().extend({ id: keyId() }));
const ONCE = 'store this key now: it is shown only once and cannot be recovered';

const actor = (ctx: { identity: Identity; router: AnyRouter }, as: 'self' | 'admin'): KeyActor => ({
  identity: ctx.identity,
  asAdmin: as === 'admin',
  keyScopes: keyScopesOf(ctx.router),
});
const self = (ctx: Parameters<typeof actor>[0]): KeyActor => actor(ctx, 'self');
const admin = (ctx: Parameters<typeof actor>[0]): KeyActor => actor(ctx, 'admin');

/** The keys namespace's procedures, with the key service in ctx. */
const keysProcedure = protectedProcedure.use(keysServices);
const keysAdminProcedure = adminProcedure.use(keysServices);

/**
 * API keys (docs/api-keys.md). A user manages their own keys; the admin variants act on any
 * user's. Creating and rotating return the key once; nothing else ever does. None is published on
 * MCP: a key is a credential and does not belong in a model's context.
 */
export const keysRouter = router({
  create: keysProcedure
    .meta({ keyAccess: 'none', description: 'Create an API key for your account (the key is in the answer only this once)' })
    .input(z.lazy(keyRulesSchema))
    .mutation(async ({ ctx, input }) => ({ ...(await ctx.keys.create(self(ctx), ctx.identity.sub, input)), notice: ONCE })),

  list: keysProcedure
    .meta({ keyAccess: 'any', description: 'Your API keys (never the keys themselves)' })
    .input(ListInput)
    .query(async ({ ctx, input }) => ({ keys: await ctx.keys.list(self(ctx), ctx.identity.sub, input) })),

  get: keysProcedure
    .meta({ keyAccess: 'any', description: 'One of your API keys, with its spend' })
    .input(KeyInput)
    .query(async ({ ctx, input }) => ({
      apiKey: toView(await ctx.keys.get(self(ctx), input.id)),
      usage: await ctx.keys.usage(input.id),
    })),

  update: keysProcedure
    .meta({
      keyAccess: 'none',
      description: "Change one of your API keys' rules (name, scopes, models, budget, limits, expiry, addresses, metadata)",
    })
    .input(UpdateInput)
    .mutation(async ({ ctx, input: { id, ...patch } }) => ({ apiKey: await ctx.keys.update(self(ctx), id, patch) })),

  revoke: keysProcedure
    .meta({ keyAccess: 'none', description: 'Revoke one of your API keys (refused on its next call on every instance)' })
    .input(KeyInput)
    .mutation(async ({ ctx, input }) => ({ apiKey: await ctx.keys.revoke(self(ctx), input.id) })),

  rotate: keysProcedure
    .meta({
      keyAccess: 'none',
      description: 'Replace one of your API keys with a new one with the same rules; the old one stops now or after graceSec',
    })
    .input(RotateInput)
    .mutation(async ({ ctx, input }) => ({ ...(await ctx.keys.rotate(self(ctx), input.id, input.graceSec)), notice: ONCE })),

  adminCreate: keysAdminProcedure
    .meta({ description: 'Create an API key for any user (administrators)' })
    .input(z.lazy(() => keyRulesSchema().extend({ userId: userId() })))
    .mutation(async ({ ctx, input: { userId, ...rules } }) => {
      const { sub } = await ctx.users.find(userId);
      return { ...(await ctx.keys.create(admin(ctx), sub, rules)), notice: ONCE };
    }),

  adminList: keysAdminProcedure
    .meta({ description: "Any user's API keys (administrators)" })
    .input(z.lazy(() => z.object({ userId: userId(), includeRevoked: z.boolean().default(false) })))
    .query(async ({ ctx, input }) => {
      const { sub } = await ctx.users.find(input.userId);
      return { userId: sub, keys: await ctx.keys.list(admin(ctx), sub, input) };
    }),

  adminGet: keysAdminProcedure
    .meta({ description: 'Any API key, with its spend (administrators)' })
    .input(KeyInput)
    .query(async ({ ctx, input }) => ({
      apiKey: toView(await ctx.keys.get(admin(ctx), input.id)),
      usage: await ctx.keys.usage(input.id),
    })),

  adminUpdate: keysAdminProcedure
    .meta({ description: "Change any API key's rules (administrators)" })
    .input(UpdateInput)
    .mutation(async ({ ctx, input: { id, ...patch } }) => ({ apiKey: await ctx.keys.update(admin(ctx), id, patch) })),

  adminRevoke: keysAdminProcedure
    .meta({ description: 'Revoke any API key (administrators)' })
    .input(KeyInput)
    .mutation(async ({ ctx, input }) => ({ apiKey: await ctx.keys.revoke(admin(ctx), input.id) })),

  adminRotate: keysAdminProcedure
    .meta({ description: 'Rotate any API key (administrators)' })
    .input(RotateInput)
    .mutation(async ({ ctx, input }) => ({ ...(await ctx.keys.rotate(admin(ctx), input.id, input.graceSec)), notice: ONCE })),
});
