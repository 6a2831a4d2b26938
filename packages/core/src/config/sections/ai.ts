import { z } from 'zod';

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
});
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

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
    /** Named server-side system prompts a request may reference by name. */
    systemPrompts: z.record(z.string(), z.string()).default({}),
    /** Largest `content` accepted, in characters. Default 200000. */
    maxContentChars: z.number().int().min(1).default(200_000),
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
  })
  .prefault({});
