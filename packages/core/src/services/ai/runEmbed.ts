import { randomUUID } from 'node:crypto';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import { assertKeyAllowsModel } from '../apiKeys/keyRules.js';
import { loadAiSdk } from './aiSdk.js';
import type { SettledUsage, UsageMetadata } from '../metering/Metering.js';
import type { CallDeps, TextCall } from './prepareCall.js';
import { resolveModelRef } from './resolveModelRef.js';
import { accountCall, type Pricing } from './accountCall.js';
import { attemptLoop, settleLoop } from './attemptLoop.js';
import { loadUpstreamFetch } from './upstreamFetch.js';

/** ai.embed input. */
export interface EmbedInput {
  /** `provider/model`, a bare provider (its first embedding model) or an alias. */
  model: string;
  /** One text or up to 2048. */
  input: string | string[];
  /** Output dimensions, for models that can shorten their vectors (OpenAI text-embedding-3, Gemini). */
  dimensions?: number;
  apiKey?: string;
  metadata?: UsageMetadata;
}

export interface EmbedOutput {
  success: true;
  data: { provider: ProviderId; model: string; embeddings: number[][]; usage: { inputTokens: number | null }; requestId: string };
  tokenUsage?: SettledUsage;
  usageInfo?: { tokensUsed: number; estimatedCostUsd: number };
}

/**
 * One embedding call: the same payer rules, reservation and settlement as ai.generateText,
 * metered by input tokens (priced with the registry's inputUsdPerMTok). No fallbacks: another
 * model's vectors live in another space, so a silent switch would corrupt an index.
 */
export async function runEmbed(deps: CallDeps, input: EmbedInput, call: TextCall): Promise<EmbedOutput> {
  const { config, providers, logger } = deps;
  const ai = config.ai;
  const ref = resolveModelRef(config, input.model);
  const provider = providers.assertKnown(ref.provider);
  const candidate = ref.model || providers.allowedModels(provider, 'embedding')[0];
  if (!candidate)
    throw new CoreError('INVALID_PARAMS', `${provider} has no embedding model configured; name one as ${provider}/<model>`, {
      details: { reason: 'no_embeddings', provider, field: 'model' },
    });
  const model = providers.assertModelAllowed(provider, candidate);
  const info = providers.models.get(provider, model);
  if (info && (info.kind ?? 'language') !== 'embedding') {
    throw new CoreError('INVALID_PARAMS', `${provider}/${model} is not an embedding model`, {
      details: { reason: 'not_an_embedding_model', provider, field: 'model' },
    });
  }
  assertKeyAllowsModel(call.identity?.apiKey, provider, model);
  const values = typeof input.input === 'string' ? [input.input] : input.input;
  const chars = values.reduce((n, v) => n + v.length, 0);
  if (chars > ai.maxContentChars)
    throw new CoreError('PAYLOAD_TOO_LARGE', `input may have at most ${ai.maxContentChars} characters in all`, {
      details: { field: 'input' },
    });

  // An upper bound: no tokenizer encodes fewer than one byte per token.
  const estimate = values.reduce((n, v) => n + Buffer.byteLength(v, 'utf8'), 0) + values.length;
  const requestId = randomUUID();
  const costUsd = providers.models.estimateEmbeddingCostUsd(provider, model, estimate);
  const hold = await deps.metering.hold({
    identity: call.identity,
    ...(call.ip ? { ip: call.ip } : {}),
    requestId,
    provider,
    estimatedTokens: estimate,
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(input.apiKey !== undefined ? { ownKey: input.apiKey } : {}),
    byokAllowed: providers.isByokProvider(provider),
    serverPays: providers.serverKey(provider) !== undefined,
  });
  const target = { provider, model, requestId, apiKey: hold.apiKey ?? providers.serverKey(provider)! };

  let result: { embeddings: number[][]; usage: { tokens: number } };
  try {
    // One target: another model's vectors live in another space, so there is no fallback.
    const served = await settleLoop(
      // biome-ignore lint/correctness/useYield: attemptLoop takes a generator; a non-streamed attempt yields nothing, it returns its result
      attemptLoop(deps, [target], call, async function* (t, ctx) {
        const [{ ai: sdk }, embeddingModel] = await Promise.all([
          loadAiSdk(),
          providers.embeddingModel(provider, model, t.apiKey),
          loadUpstreamFetch(),
        ]);
        ctx.start();
        if (ctx.signal.aborted) throw new Error('aborted before the upstream call');
        const dims =
          input.dimensions === undefined
            ? undefined
            : {
                openai: { dimensions: input.dimensions },
                google: { outputDimensionality: input.dimensions },
                [provider]: { dimensions: input.dimensions },
              };
        return await sdk.embedMany({
          model: embeddingModel,
          values,
          maxRetries: ai.maxRetries,
          abortSignal: ctx.signal,
          ...(dims ? { providerOptions: dims } : {}),
        });
      }),
    );
    result = served.value;
  } catch (err) {
    await hold.release(err instanceof CoreError ? String(err.details?.reason ?? err.appCode) : 'failed');
    throw err;
  }
  if (call.signal.aborted) {
    await hold.release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }
  const reported = result.usage?.tokens ? result.usage.tokens : undefined;
  const tokensUsed = reported ?? estimate;
  if (reported === undefined)
    logger.warn('ai: upstream reported no embedding usage; charging the estimate', { requestId, provider, model });
  const data: EmbedOutput['data'] = { provider, model, embeddings: result.embeddings, usage: { inputTokens: reported ?? null }, requestId };
  const price: Pricing = (pr, m, usage) => providers.models.estimateEmbeddingCostUsd(pr, m, usage.tokensUsed);
  const charged = await accountCall(deps, hold, price, call, { provider, model, metadata: input.metadata }, { tokensUsed });
  return { success: true, data, ...charged };
}
