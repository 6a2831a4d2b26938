import { z } from 'zod';
import { DefaultBudgetSchema } from './budget.js';

export const PROVIDER_IDS = ['anthropic', 'openai', 'google', 'openrouter'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

const ProviderConfigSchema = z.strictObject({
  /** Server key; defaults to the provider's usual environment variable. */
  apiKey: z.string().optional(),
  /** Base URL (OpenAI-compatible local servers, test upstreams). */
  baseUrl: z.url().optional(),
  defaultModel: z.string().optional(),
  /** micromatch patterns; when set, only matching models are allowed. */
  allowedModels: z.array(z.string()).optional(),
  /** micromatch patterns that are never allowed. */
  blockedModels: z.array(z.string()).optional(),
  /** OpenAI only: 'responses' (default, the Responses API) or 'chat' (Chat Completions, for compatible servers). */
  api: z.enum(['responses', 'chat']).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** One model's registry entry; in `ai.models` every field overrides the bundled value. */
const ModelInfoSchema = z.strictObject({
  /** Context window in tokens. */
  contextWindow: z.number().int().min(1).optional(),
  /** Largest output the model produces, in tokens. */
  maxOutputTokens: z.number().int().min(1).optional(),
  /** USD per million input tokens. */
  inputUsdPerMTok: z.number().min(0).optional(),
  /** USD per million output tokens. */
  outputUsdPerMTok: z.number().min(0).optional(),
  /** Input the model accepts besides text: 'image' and 'file' parts (chat `messages`). */
  input: z.array(z.enum(['text', 'image', 'file'])).optional(),
});
export type ModelInfoOverride = z.infer<typeof ModelInfoSchema>;

export const AiSchema = z
  .strictObject({
    providers: z.partialRecord(z.enum(PROVIDER_IDS), ProviderConfigSchema).default({}),
    /** Provider used when a request names none. Default 'anthropic'. */
    defaultProvider: z.enum(PROVIDER_IDS).default('anthropic'),
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
    /** Providers for which a caller may use its own key (input apiKey or stored BYOK key). Default all four. */
    byokProviders: z.array(z.enum(PROVIDER_IDS)).default([...PROVIDER_IDS]),
    /** Model registry overrides and additions, per provider and model id (merged over the bundled data). */
    models: z.partialRecord(z.enum(PROVIDER_IDS), z.record(z.string().min(1), ModelInfoSchema)).default({}),
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
    aliases: z.record(z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'alias names use letters, digits, _ . : -'), z.string().regex(/^[a-z]+\/.+$/, 'an alias points at provider/model')).default({}),
    /**
     * Targets tried in order when the requested one fails with 429, 5xx, a timeout or a
     * connection error (requests may send their own `fallbacks`): `provider/model` or an alias.
     */
    fallbacks: z.array(z.string().min(1).max(300)).max(5).default([]),
    /** Backoff between fallback targets: `backoffMs` doubled per attempt, at most `maxBackoffMs`. */
    retry: z.strictObject({ backoffMs: z.number().int().min(0).default(100), maxBackoffMs: z.number().int().min(0).default(2000) }).prefault({}),
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
    maxAttachmentBytes: z.number().int().min(1).default(5 * 1024 * 1024),
    /** Most image and file parts in one request. Default 8. */
    maxAttachments: z.number().int().min(0).default(8),
  })
  // A typo in a fallback or an alias target would otherwise fail every call that uses it.
  .superRefine((ai, ctx) => {
    const known = (ref: string) => /^(anthropic|openai|google|openrouter|provider_[a-d])(\/.+)?$/.test(ref);
    for (const [alias, target] of Object.entries(ai.aliases)) {
      if (!known(target)) ctx.addIssue({ code: 'custom', path: ['aliases', alias], message: `"${target}" must be provider/model with a provider among ${PROVIDER_IDS.join(', ')}` });
    }
    ai.fallbacks.forEach((ref, i) => {
      if (!known(ref) && !Object.hasOwn(ai.aliases, ref)) ctx.addIssue({ code: 'custom', path: ['fallbacks', i], message: `"${ref}" must be provider/model, a provider (${PROVIDER_IDS.join(', ')}) or an alias from ai.aliases` });
    });
  })
  .prefault({});

export const BillingSchema = z
  .strictObject({
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
    reservationTtlMs: z.number().int().min(1000).default(15 * 60_000),
    /**
     * Budget of every user who has none of their own for a period (admin.setBudget sets one).
     * Default: no budget. See docs/billing.md#budgets.
     */
    defaultBudget: DefaultBudgetSchema,
  })
  .prefault({});
