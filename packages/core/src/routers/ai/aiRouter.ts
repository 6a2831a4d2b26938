import { z } from '../../lib/zod.js';
import { MAX_EMBED_INPUTS, checkContentOrMessages, textInputFields } from '../../services/ai/chatInput.js';
import { KeyProviderInput, ProviderInput } from '../../services/ai/providerIds.js';
import type { GenerateTextCall, GenerateTextInput } from '../../services/ai/runGenerateText.js';
import type { Context } from '../../pipeline/context.js';
import { countKeyCheck } from '../../services/rateLimit/keyCheckLimit.js';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { aiServices } from './aiServices.js';
import { modelsForKey } from '../../services/apiKeys/keyRules.js';
import type { EmbedInput } from '../../services/ai/runEmbed.js';

/**
 * ai.generateText / ai.streamText input: the spec's fields (`content`, `systemPrompt` may be
 * `@name` of a server prompt) or chat `messages`, plus tools and structured output.
 */
export const GenerateTextInputSchema = z.lazy(() =>
  z
    .object({
      ...textInputFields(),
      provider: ProviderInput.optional(),
      /** Instead of provider + options.model: `provider/model`, a bare provider or an alias; names named providers too. */
      model: z.string().min(1).max(300).optional(),
      apiKey: z.string().min(1).max(1000).optional(),
      /** The response cache (ai.cache) for this call: 'on', 'off', or 'refresh' (no lookup; the fresh answer is stored). */
      cache: z.enum(['on', 'off', 'refresh']).optional(),
      metadata: z.object({ name: z.string().max(200).optional(), type: z.string().max(100).optional() }).optional(),
      options: z
        .object({
          model: z.string().min(1).max(200).optional(),
          /** Default config.ai.defaultMaxTokens; at most config.ai.maxTokensLimit. */
          maxTokens: z.number().int().min(1).optional(),
          temperature: z.number().min(0).max(2).optional(),
          /** Nucleus sampling: the probability mass the model samples from. */
          topP: z.number().min(0).max(1).optional(),
          /** Texts that end the answer where they appear (at most 16; OpenAI's own limit is 4). */
          stopSequences: z.array(z.string().min(1).max(1000)).max(16).optional(),
          /** Sampling seed, for providers that make answers repeatable with one. */
          seed: z.number().int().optional(),
        })
        .optional(),
    })
    .superRefine(checkContentOrMessages),
);

/**
 * The `x-ai-backend-cache: on|off` request header, on every entry point (docs/ai.md#response-cache):
 * the call's `cache` when its input names none. (HTTP's own `cache-control` counts on /v1 only,
 * where the request parsers read it: a browser may send it on any request of its own accord.)
 */
function headerCache(headers: Headers | undefined): 'on' | 'off' | undefined {
  const v = headers?.get('x-ai-backend-cache')?.trim().toLowerCase();
  return v === 'on' || v === 'off' ? v : undefined;
}

/** Drop absent fields (exactOptionalPropertyTypes); `cache` from the request header when the input has none. */
function callInput(input: z.infer<typeof GenerateTextInputSchema>, ctx: Pick<Context, 'req'>): GenerateTextInput {
  const out = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as GenerateTextInput;
  const cache = out.cache ?? headerCache(ctx.req.headers);
  return cache === undefined ? out : { ...out, cache };
}

/** Every ai.* procedure: public, with the AI service in ctx. */
const aiProcedure = publicProcedure.use(aiServices);

/** Who calls and how to stop (and, from /v1, the wire request the pass-through path may forward). */
function textCall(ctx: Pick<Context, 'identity' | 'req' | 'wire'>): GenerateTextCall {
  return {
    identity: ctx.identity,
    signal: ctx.req.signal,
    ip: ctx.req.ip,
    ...(ctx.wire ? { wire: ctx.wire } : {}),
  };
}

/**
 * The ai namespace: provider and model registry, key checks and text generation.
 * Everything is public: anonymous callers may bring their own key; who pays is decided by
 * billing inside generateText.
 */
export const aiRouter = router({
  generateText: aiProcedure
    .meta({
      keyAccess: 'any',
      description:
        'Generate text with an upstream model; platform tokens or your own apiKey (BYOK). systemPrompt may name a server prompt as "@name".',
      // An upstream call can take minutes: a task for 2026-07-28 clients that speak the Tasks extension.
      longRunning: true,
      mcp: { annotations: { openWorldHint: true } },
    })
    .input(GenerateTextInputSchema)
    .mutation(({ ctx, input }) => ctx.ai.generateText(callInput(input, ctx), textCall(ctx))),

  streamText: aiProcedure
    .meta({
      keyAccess: 'any',
      description:
        'Stream text from an upstream model: events start, text (deltas), tool-call, finish (usage and charge). Same input and billing as generateText. On MCP the text arrives as progress notifications and the result carries the usage.',
      // An upstream call can take minutes: a task for 2026-07-28 clients that speak the Tasks extension.
      longRunning: true,
      mcp: { annotations: { openWorldHint: true } },
    })
    .input(GenerateTextInputSchema)
    // Checks, payer and reservation run before the stream is returned, so refusals are ordinary errors.
    .mutation(({ ctx, input }) => ctx.ai.streamText(callInput(input, ctx), textCall(ctx))),

  embed: aiProcedure
    .meta({
      keyAccess: 'any',
      description:
        'Embedding vectors for one text or a list (model: provider/model, a bare provider or an alias); metered by input tokens like generateText',
      countsAsToolCall: true,
    })
    .input(
      z.lazy(() =>
        z.object({
          model: z.string().min(1).max(300),
          input: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(MAX_EMBED_INPUTS)]),
          dimensions: z.number().int().min(1).max(16_384).optional(),
          apiKey: z.string().min(1).max(1000).optional(),
          metadata: z.object({ name: z.string().max(200).optional(), type: z.string().max(100).optional() }).optional(),
        }),
      ),
    )
    .mutation(({ ctx, input }) =>
      ctx.ai.embed(Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as unknown as EmbedInput, {
        identity: ctx.identity,
        signal: ctx.req.signal,
        ip: ctx.req.ip,
      }),
    ),

  listProviders: aiProcedure
    .meta({
      keyAccess: 'any',
      description: 'Providers in the registry, whether the server pays for each, and where the registry data comes from',
      mcp: { annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .query(({ ctx }) => ctx.ai.listProviders()),

  listProvidersBYOK: aiProcedure
    .meta({ keyAccess: 'any', description: 'Providers for which you may use your own API key' })
    .query(({ ctx }) => ctx.ai.listProvidersBYOK()),

  listAllowedModels: aiProcedure
    .meta({
      keyAccess: 'any',
      description: "Model ids usable with each provider (or one provider), after the server's model restrictions",
      mcp: { annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ provider: ProviderInput.optional() }).optional()))
    // Called with an API key: only the models the key may use.
    .query(({ ctx, input }) => modelsForKey(ctx.identity?.apiKey, ctx.ai.listAllowedModels(input?.provider))),

  getRegistryHealth: aiProcedure
    .meta({ keyAccess: 'any', description: 'Registry availability and per-provider call metrics; error details when the check fails' })
    .query(({ ctx }) => ctx.ai.registryHealth()),

  validateProvider: aiProcedure
    .meta({
      keyAccess: 'any',
      description: 'Check an API key with a cheap real request to the provider; tells an invalid key from an unreachable provider',
    })
    .input(z.lazy(() => z.object({ provider: KeyProviderInput, apiKey: z.string().min(1).max(1000) })))
    .mutation(async ({ ctx, input }) => {
      await countKeyCheck(ctx.keyChecks, ctx.identity, ctx.req.ip);
      return ctx.ai.validateProvider(input.provider, input.apiKey, ctx.req.signal);
    }),
});
