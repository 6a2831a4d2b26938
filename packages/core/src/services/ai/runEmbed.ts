import { randomUUID } from 'node:crypto';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import { assertKeyAllowsModel } from '../apiKeys/keyRules.js';
import { loadAiSdk } from './aiSdk.js';
import { mapUpstreamError } from './mapUpstreamError.js';
import type { Reservation, SettledUsage, UsageMetadata } from './Metering.js';
import type { CallDeps, TextCall } from './prepareCall.js';
import { resolveModelRef } from './resolveModelRef.js';
import { ownError } from './runGenerateText.js';
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

export const MAX_EMBED_INPUTS = 2048;

/**
 * One embedding call: the same payer rules, reservation and settlement as ai.generateText,
 * metered by input tokens (priced with the registry's inputUsdPerMTok). No fallbacks: another
 * model's vectors live in another space, so a silent switch would corrupt an index.
 */
export async function runEmbed(deps: CallDeps, input: EmbedInput, call: TextCall): Promise<EmbedOutput> {
  const { config, providers, metering, logger } = deps;
  const ai = config.ai;
  const ref = resolveModelRef(config, input.model);
  const provider = providers.assertKnown(ref.provider);
  const candidate = ref.model || providers.allowedModels(provider, 'embedding')[0];
  if (!candidate) throw new CoreError('INVALID_PARAMS', `${provider} has no embedding model configured; name one as ${provider}/<model>`, { details: { reason: 'no_embeddings', provider, field: 'model' } });
  const model = providers.assertModelAllowed(provider, candidate);
  const info = providers.models.get(provider, model);
  if (info && (info.kind ?? 'language') !== 'embedding') {
    throw new CoreError('INVALID_PARAMS', `${provider}/${model} is not an embedding model`, { details: { reason: 'not_an_embedding_model', provider, field: 'model' } });
  }
  assertKeyAllowsModel(call.identity?.apiKey, provider, model);
  const values = typeof input.input === 'string' ? [input.input] : input.input;
  const chars = values.reduce((n, v) => n + v.length, 0);
  if (chars > ai.maxContentChars) throw new CoreError('PAYLOAD_TOO_LARGE', `input may have at most ${ai.maxContentChars} characters in all`, { details: { field: 'input' } });

  const byokAllowed = providers.isByokProvider(provider);
  if (input.apiKey !== undefined && !byokAllowed) throw new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, { details: { reason: 'byok_not_allowed', provider } });
  // An upper bound: no tokenizer encodes fewer than one byte per token.
  const estimate = values.reduce((n, v) => n + Buffer.byteLength(v, 'utf8'), 0) + values.length;
  const requestId = randomUUID();
  const decision = await metering.decide({ identity: call.identity, provider, estimatedTokens: estimate, apiKeyProvided: input.apiKey !== undefined, ...(call.ip ? { ip: call.ip } : {}) });
  let apiKey: string;
  let reservation: Reservation | undefined;
  if (input.apiKey !== undefined) apiKey = input.apiKey;
  else if (decision.mode === 'byok') {
    if (!decision.apiKey || !byokAllowed) throw new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, { details: { reason: 'byok_not_allowed', provider } });
    apiKey = decision.apiKey;
  } else {
    const serverKey = providers.serverKey(provider);
    if (!serverKey) throw new CoreError('BAD_REQUEST', `this server does not pay for provider ${provider}; send your own apiKey`, { details: { reason: 'provider_not_served', provider } });
    apiKey = serverKey;
    const costUsd = providers.models.estimateEmbeddingCostUsd(provider, model, estimate);
    reservation = await metering.reserve({ identity: call.identity, tokens: estimate, requestId, decision, ...(call.ip ? { ip: call.ip } : {}), ...(costUsd !== undefined ? { costUsd } : {}) });
  }
  const release = async (reason: string) => {
    if (!reservation) return;
    await metering.release(reservation, reason).catch((err: unknown) => logger.error('ai: releasing a reservation failed', { requestId, reason, error: err instanceof Error ? err.message : String(err) }));
  };

  const ac = new AbortController();
  let result: { embeddings: number[][]; usage: { tokens: number } };
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const onClientAbort = () => ac.abort();
  call.signal.addEventListener('abort', onClientAbort, { once: true });
  let started = performance.now();
  try {
    const [{ ai: sdk }, embeddingModel] = await Promise.all([loadAiSdk(), providers.embeddingModel(provider, model, apiKey), loadUpstreamFetch()]);
    started = performance.now();
    timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, ai.timeoutMs);
    if (call.signal.aborted) throw new Error('aborted before the upstream call');
    const dims = input.dimensions === undefined ? undefined : { openai: { dimensions: input.dimensions }, google: { outputDimensionality: input.dimensions }, [provider]: { dimensions: input.dimensions } };
    result = await sdk.embedMany({ model: embeddingModel, values, maxRetries: ai.maxRetries, abortSignal: ac.signal, ...(dims ? { providerOptions: dims } : {}) });
    deps.record(provider, true, performance.now() - started);
  } catch (err) {
    const own = ownError(err);
    const error = own ?? (await mapUpstreamError(err, { provider, timedOut, timeoutMs: ai.timeoutMs, cancelled: call.signal.aborted }));
    if (!own) {
      deps.record(provider, false, performance.now() - started, String(error.details?.reason));
      logger.warn('ai: upstream embedding call failed', { requestId, provider, model, reason: error.details?.reason, status: error.details?.status });
    }
    await release(String(error.details?.reason ?? error.appCode));
    throw error;
  } finally {
    clearTimeout(timer);
    call.signal.removeEventListener('abort', onClientAbort);
  }
  if (call.signal.aborted) {
    await release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }
  const reported = result.usage?.tokens ? result.usage.tokens : undefined;
  const tokensUsed = reported ?? estimate;
  if (reported === undefined) logger.warn('ai: upstream reported no embedding usage; charging the estimate', { requestId, provider, model });
  const data: EmbedOutput['data'] = { provider, model, embeddings: result.embeddings, usage: { inputTokens: reported ?? null }, requestId };
  const metadata = input.metadata ?? {};
  const costUsd = providers.models.estimateEmbeddingCostUsd(provider, model, tokensUsed);
  if (reservation) {
    const tokenUsage = await metering.settle(reservation, { tokensUsed, provider, model, metadata, ...(costUsd !== undefined ? { costUsd } : {}) });
    return { success: true, data, tokenUsage };
  }
  const estimatedCostUsd = costUsd ?? 0;
  try {
    await metering.recordByokUsage({ identity: call.identity, provider, model, tokensUsed, estimatedCostUsd, metadata, requestId });
  } catch (err) {
    logger.warn('ai: recording BYOK usage failed', { requestId, error: err instanceof Error ? err.message : String(err) });
  }
  return { success: true, data, usageInfo: { tokensUsed, estimatedCostUsd } };
}
