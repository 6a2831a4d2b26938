import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';
import { DefaultBudgetSchema } from './budget.js';
import { modelInfoSchema, PROVIDER_IDS, providersSchema, splitModelRef } from './aiProviders.js';
import { MODEL_NAME, responseCacheSchema, routesSchema } from './aiRoutes.js';

export {
  PROVIDER_IDS,
  NAMED_PROVIDER_TYPES,
  isBuiltinProvider,
  type ProviderId,
  type BuiltinProviderId,
  type ProviderConfig,
  type NamedProviderConfig,
  type NamedProviderType,
  type ModelInfoOverride,
} from './aiProviders.js';

export const AiSchema = lazySection('ai', () =>
  z
    .strictObject({
      /** The four built-ins by id, and named providers (any other id, with a `type`): see aiProviders.ts. */
      providers: providersSchema(),
      /** Provider used when a request names none. Default 'anthropic'. */
      defaultProvider: z.string().default('anthropic'),
      /** maxTokens when a request gives none. Default 1024. */
      defaultMaxTokens: z.number().int().min(1).default(1024),
      /** Upper bound for maxTokens. Default 32768. */
      maxTokensLimit: z.number().int().min(1).default(32_768),
      /** Upstream call timeout in ms. Default 60000. */
      timeoutMs: z.number().int().min(100).default(60_000),
      /**
       * Named server-side system prompts a request references as `@name`; the text never leaves the
       * server. Used only on calls the platform pays for, unless the entry is
       * `{ text, allowWithCallerKeys: true }` (then also sent to the provider account of a caller's
       * own key, so that account's owner can read it).
       */
      systemPrompts: z
        .record(
          z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'prompt names use letters, digits, _ . -'),
          z.union([z.string().min(1), z.strictObject({ text: z.string().min(1), allowWithCallerKeys: z.boolean().default(false) })]),
        )
        .default({}),
      /** Largest `content` accepted, in characters. Default 200000. */
      maxContentChars: z.number().int().min(1).default(200_000),
      /**
       * Whether a request may send its own system prompt text. When false only `@name`
       * references to `systemPrompts` are accepted. Default true.
       */
      allowInlineSystemPrompts: z.boolean().default(true),
      /**
       * Providers for which a caller may use its own key (input apiKey or stored BYOK key). Default
       * the four built-ins; named providers with `byok: true` are added when this is resolved.
       */
      byokProviders: z.array(z.string()).default([...PROVIDER_IDS]),
      /** Model registry overrides and additions, per provider and model id (merged over the bundled data). */
      models: z.record(z.string(), z.record(z.string().min(1), modelInfoSchema())).default({}),
      /**
       * Budget of provider key checks (ai.validateProvider, auth.validateUserKey), counted per
       * client address and, for signed-in callers, per identity: without it the server is a free
       * relay for testing stolen keys. Default 10 per identity and 20 per address per 10 minutes.
       */
      keyChecks: z
        .strictObject({
          windowMs: z.number().int().min(1000).default(600_000),
          maxPerIdentity: z.number().int().min(1).default(10),
          maxPerAddress: z.number().int().min(1).default(20),
        })
        .prefault({}),
      /** Timeout of ai.validateProvider's check request, in ms. Default 5000. */
      validateTimeoutMs: z.number().int().min(100).default(5_000),
      /** Retries of a failed upstream call inside one request (0 surfaces 429/5xx at once). Default 0. */
      maxRetries: z.number().int().min(0).max(5).default(0),
      /**
       * Model aliases for the OpenAI-compatible endpoint's `model` field (and `options.model`
       * refs): alias → `provider/model`, e.g. `{ fast: 'openai/gpt-4.1-mini' }`.
       */
      aliases: z
        .record(
          z.string().regex(MODEL_NAME, 'alias names use letters, digits, _ . : -'),
          z.string().regex(/^(?:[a-z][a-z0-9_-]*\/.+|[A-Za-z0-9_.:-]{1,100})$/, 'an alias points at provider/model or a route'),
        )
        .default({}),
      /**
       * Routes: one public model name served by several deployments (`provider/model` targets),
       * spread by a strategy, with cooldowns, retries and per-target rpm/tpm (docs/ai.md#routes).
       */
      routes: routesSchema(),
      /**
       * The pass-through path of /v1 (docs/ai.md#pass-through): a call whose wire format the serving
       * target speaks is forwarded as sent (model rewritten) and its answer's bytes returned as they
       * come, instead of going through the AI SDK. Metering, limits, fallbacks and the rest are the
       * same on both paths. Default true.
       */
      passThrough: z.boolean().default(true),
      /** Exact-match response cache in the shared store; off by default (docs/ai.md#response-cache). */
      cache: responseCacheSchema(),

      /**
       * Targets tried in order when the requested one fails with 429, 5xx, a timeout or a
       * connection error (requests may send their own `fallbacks`): `provider/model` or an alias.
       */
      fallbacks: z.array(z.string().min(1).max(300)).max(5).default([]),
      /** Backoff between fallback targets: `backoffMs` doubled per attempt, at most `maxBackoffMs`. */
      retry: z
        .strictObject({ backoffMs: z.number().int().min(0).default(100), maxBackoffMs: z.number().int().min(0).default(2000) })
        .prefault({}),
      /** Per-provider circuit breaker of calls with fallbacks; shared through the storage (Redis). */
      circuitBreaker: z
        .strictObject({
          failureThreshold: z.number().int().min(1).default(5),
          cooldownMs: z.number().int().min(100).default(30_000),
          windowMs: z.number().int().min(100).default(60_000),
        })
        .prefault({}),
      /**
       * Active registry health: a cheap authenticated GET per server-paid provider (its model list;
       * OpenRouter: the key's record) every `intervalMs`. One instance per interval probes (a lease
       * in the shared storage); results are stored there, so every instance reports the same health.
       * Off by default.
       */
      healthProbe: z
        .strictObject({
          enabled: z.boolean().default(false),
          /** Time between probe rounds, in ms. Default 30000. */
          intervalMs: z.number().int().min(50).default(30_000),
          /** Time one probe may take before it counts as failed (reason `timeout`), in ms. Default 5000. */
          timeoutMs: z.number().int().min(50).default(5_000),
        })
        .prefault({}),
      /** Largest image or file part of a chat message, in bytes (decoded). Default 5 MB. */
      maxAttachmentBytes: z
        .number()
        .int()
        .min(1)
        .default(5 * 1024 * 1024),
      /** Most image and file parts in one request. Default 8. */
      maxAttachments: z.number().int().min(0).default(8),
    })
    // A typo in a fallback or an alias target would otherwise fail every call that uses it.
    .superRefine((ai, ctx) => {
      const ids = [...PROVIDER_IDS, ...Object.keys(ai.providers).filter((id) => !(PROVIDER_IDS as readonly string[]).includes(id))];
      const isId = (id: string) => ids.includes(id) || /^provider_[a-d]$/.test(id);
      const known = (ref: string) => isId(splitModelRef(ref).provider);
      const listed = ids.join(', ');
      if (!isId(ai.defaultProvider))
        ctx.addIssue({
          code: 'custom',
          path: ['defaultProvider'],
          message: `unknown provider "${ai.defaultProvider}"; configured: ${listed}`,
        });
      ai.byokProviders.forEach((id, i) => {
        if (!isId(id))
          ctx.addIssue({ code: 'custom', path: ['byokProviders', i], message: `unknown provider "${id}"; configured: ${listed}` });
      });
      for (const id of Object.keys(ai.models)) {
        if (!isId(id)) ctx.addIssue({ code: 'custom', path: ['models', id], message: `unknown provider "${id}"; configured: ${listed}` });
      }
      const route = (ref: string) => Object.hasOwn(ai.routes, ref);
      for (const [alias, target] of Object.entries(ai.aliases)) {
        if (!known(target) && !route(target))
          ctx.addIssue({
            code: 'custom',
            path: ['aliases', alias],
            message: `"${target}" must be provider/model with a provider among ${listed}, or a route of ai.routes`,
          });
      }
      for (const [name, r] of Object.entries(ai.routes)) {
        r.targets.forEach((t, i) => {
          if (!known(t.model))
            ctx.addIssue({
              code: 'custom',
              path: ['routes', name, 'targets', i, 'model'],
              message: `"${t.model}" must be provider/model with a provider among ${listed}`,
            });
        });
      }
      ai.fallbacks.forEach((ref, i) => {
        if (!known(ref) && !Object.hasOwn(ai.aliases, ref) && !route(ref))
          ctx.addIssue({
            code: 'custom',
            path: ['fallbacks', i],
            message: `"${ref}" must be provider/model, a provider (${listed}), an alias from ai.aliases or a route of ai.routes`,
          });
      });
    })
    // Resolved once: named providers that allow callers' own keys join byokProviders.
    .overwrite((ai) => {
      const named = Object.entries(ai.providers)
        .filter(([, p]) => 'type' in p && p.byok)
        .map(([id]) => id);
      // The spec's neutral names are accepted here too; the resolved config holds real ids.
      const real = (id: string) => (/^provider_[a-d]$/.test(id) ? PROVIDER_IDS['abcd'.indexOf(id.slice(-1))]! : id);
      return { ...ai, defaultProvider: real(ai.defaultProvider), byokProviders: [...new Set([...ai.byokProviders.map(real), ...named])] };
    }),
);

export const BillingSchema = lazySection('billing', () =>
  z.strictObject({
    /** Platform fee added to every server-paid call, as a fraction of tokens used. Default 0.1 (10%). */
    platformFeeRate: z.number().min(0).max(10).default(0.1),
    /** Whether anonymous callers may use the server's keys. Default false. */
    allowAnonymousServerPaid: z.boolean().default(false),
    /** Tokens an anonymous caller may use per window when allowed. */
    anonymousTokensPerWindow: z.number().int().min(0).default(10_000),
    anonymousWindowMs: z.number().int().min(1000).default(3_600_000),
    /** HMAC secret of the purchase webhook; the webhook is off without it. */
    webhookSecret: z.string().min(32).optional(),
    /** Maximum age of a webhook timestamp in seconds. Default 300. */
    webhookToleranceSec: z.number().int().min(1).default(300),
    /** Master key for the BYOK vault; defaults to oauth.encryptionKey. */
    vaultKey: z.string().min(32).optional(),
    /** Earlier vault master keys, still read (and re-encrypted under the current one) after a rotation. */
    previousVaultKeys: z.array(z.string().min(32)).default([]),
    /** How long tokens stay held for a call that never settles (crashed server) before they are released. Default 15 min. */
    reservationTtlMs: z
      .number()
      .int()
      .min(1000)
      .default(15 * 60_000),
    /**
     * Budget of every user who has none of their own for a period (admin.setBudget sets one).
     * Default: no budget. See docs/billing.md#budgets.
     */
    defaultBudget: DefaultBudgetSchema,
  }),
);
