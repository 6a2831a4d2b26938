import { randomUUID } from 'node:crypto';
import type { generateText, LanguageModel } from 'ai';
import { loadAiSdk } from './aiSdk.js';
import type { ProviderId } from '../../config/sections/ai.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../errors/CoreError.js';
import type { Logger } from '../../runtime/Logger.js';
import type { Identity } from '../../trpc/context.js';
import { mapUpstreamError } from './mapUpstreamError.js';
import type { Metering, Reservation, SettledUsage, UsageMetadata } from './Metering.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { assertPromptMayUse, type SystemPromptStore } from './SystemPromptStore.js';
import { loadUpstreamFetch } from './upstreamFetch.js';

/** ai.generateText input, as in the spec (provider already un-aliased). */
export interface GenerateTextInput {
  content: string;
  /** Inline text, or `@name` of a server-side prompt. */
  systemPrompt: string;
  provider?: ProviderId;
  apiKey?: string;
  metadata?: UsageMetadata;
  options?: { model?: string; maxTokens?: number; temperature?: number };
}

/** Who calls and how to stop: filled from the tRPC context. */
export interface GenerateTextCall {
  identity: Identity | null;
  /** Aborted when the client disconnects; aborts the upstream call. */
  signal: AbortSignal;
  ip?: string;
}

export interface GenerateTextOutput {
  success: true;
  data: {
    text: string;
    provider: ProviderId;
    model: string;
    finishReason: string;
    usage: { inputTokens: number | null; outputTokens: number | null; totalTokens: number | null };
    requestId: string;
  };
  /** Platform-paid calls. */
  tokenUsage?: SettledUsage;
  /** BYOK calls. */
  usageInfo?: { tokensUsed: number; estimatedCostUsd: number };
}

export interface GenerateTextDeps {
  config: ResolvedConfig;
  logger: Logger;
  providers: ProviderRegistry;
  prompts: SystemPromptStore;
  metering: Metering;
  /** Per-provider outcome counters for the registry health report. */
  record(provider: ProviderId, ok: boolean, ms: number, reason?: string): void;
}

/**
 * Tokens a provider adds around the messages (role markers, turn separators, reply priming):
 * a few per message on every provider we support; 64 leaves a wide margin.
 */
export const MESSAGE_OVERHEAD_TOKENS = 64;

/**
 * Worst-case tokens of a call, a true upper bound so a hold always covers the charge: every
 * token of a byte-level tokenizer encodes at least one byte, so input tokens cannot exceed the
 * UTF-8 bytes of system prompt and content plus the message overhead; output cannot exceed maxTokens.
 */
export function estimateTokens(content: string, system: string, maxTokens: number): number {
  return Buffer.byteLength(content, 'utf8') + Buffer.byteLength(system, 'utf8') + MESSAGE_OVERHEAD_TOKENS + maxTokens;
}

/**
 * One ai.generateText call: resolve provider, model and system prompt, decide who pays, hold
 * platform tokens, call the upstream through the AI SDK, then settle or release.
 *
 * Charging rule (see docs/ai.md): a platform-paid call is charged only when the upstream answer
 * is complete while the client is still connected. Any failure, timeout or client disconnect
 * before that releases the whole reservation.
 */
export async function runGenerateText(deps: GenerateTextDeps, input: GenerateTextInput, call: GenerateTextCall): Promise<GenerateTextOutput> {
  const { config, providers, metering, logger } = deps;
  const ai = config.ai;
  const provider = input.provider ?? ai.defaultProvider;
  if (input.content.length > ai.maxContentChars) {
    throw new CoreError('PAYLOAD_TOO_LARGE', `content is longer than ${ai.maxContentChars} characters`);
  }
  const maxTokens = input.options?.maxTokens ?? ai.defaultMaxTokens;
  if (maxTokens > ai.maxTokensLimit) throw new CoreError('INVALID_PARAMS', `maxTokens may be at most ${ai.maxTokensLimit}`);
  const model = providers.assertModelAllowed(provider, input.options?.model ?? providers.defaultModel(provider));
  const modelMax = providers.models.get(provider, model)?.maxOutputTokens;
  if (modelMax !== undefined && maxTokens > modelMax) throw new CoreError('INVALID_PARAMS', `maxTokens may be at most ${modelMax} for ${model}`);
  const system = deps.prompts.resolve(input.systemPrompt, ai.allowInlineSystemPrompts);
  const byokAllowed = providers.isByokProvider(provider);
  if (input.apiKey !== undefined && !byokAllowed) {
    throw new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, { details: { reason: 'byok_not_allowed', provider } });
  }
  if (call.signal.aborted) throw new CoreError('CANCELLED', 'the request was cancelled by the client');

  const requestId = randomUUID();
  const estimatedTokens = estimateTokens(input.content, system.text, maxTokens);
  const decision = await metering.decide({ identity: call.identity, provider, estimatedTokens, apiKeyProvided: input.apiKey !== undefined, ...(call.ip ? { ip: call.ip } : {}) });

  let apiKey: string;
  let mode: 'byok' | 'platform';
  if (input.apiKey !== undefined) {
    apiKey = input.apiKey;
    mode = 'byok';
  } else if (decision.mode === 'byok') {
    if (!decision.apiKey) throw new CoreError('INTERNAL', 'billing chose a stored key but returned none');
    if (!byokAllowed) throw new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, { details: { reason: 'byok_not_allowed', provider } });
    apiKey = decision.apiKey;
    mode = 'byok';
  } else {
    const serverKey = providers.serverKey(provider);
    if (!serverKey) {
      throw new CoreError('BAD_REQUEST', `this server does not pay for provider ${provider}; send your own apiKey`, { details: { reason: 'provider_not_served', provider } });
    }
    apiKey = serverKey;
    mode = 'platform';
  }

  // Before anything is held or sent: a server prompt never goes to a caller's own account.
  assertPromptMayUse(system, mode);

  let reservation: Reservation | undefined;
  if (mode === 'platform') {
    reservation = await metering.reserve({ identity: call.identity, tokens: estimatedTokens, requestId, decision, ...(call.ip ? { ip: call.ip } : {}) });
  }
  const release = async (reason: string) => {
    if (!reservation) return;
    try {
      await metering.release(reservation, reason);
    } catch (err) {
      // The hold expires and is swept by billing; the caller still gets the original error.
      logger.error('ai: releasing a reservation failed', { requestId, reason, error: err instanceof Error ? err.message : String(err) });
    }
  };

  // Load the SDK, the provider and the HTTP client before the clock starts: on a cold server the
  // imports take hundreds of ms, and ai.timeoutMs is the time the upstream gets to answer.
  let languageModel: LanguageModel;
  try {
    [languageModel] = await Promise.all([providers.languageModel(provider, model, apiKey), loadUpstreamFetch()]);
  } catch (err) {
    await release('internal');
    throw err;
  }

  const started = performance.now();
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, ai.timeoutMs);
  const onClientAbort = () => ac.abort();
  call.signal.addEventListener('abort', onClientAbort, { once: true });
  let result: Awaited<ReturnType<typeof generateText>>;
  try {
    if (call.signal.aborted) throw new Error('aborted before the upstream call');
    const { ai: sdk } = await loadAiSdk();
    result = await sdk.generateText({
      model: languageModel,
      ...(system.text ? { system: system.text } : {}),
      prompt: input.content,
      maxOutputTokens: maxTokens,
      ...(input.options?.temperature !== undefined ? { temperature: input.options.temperature } : {}),
      maxRetries: ai.maxRetries,
      abortSignal: ac.signal,
    });
  } catch (err) {
    const error = await mapUpstreamError(err, { provider, timedOut, timeoutMs: ai.timeoutMs, cancelled: call.signal.aborted });
    const reason = String(error.details?.reason);
    deps.record(provider, false, performance.now() - started, reason);
    logger.warn('ai: upstream call failed', { requestId, provider, model, mode, reason, status: error.details?.status });
    await release(reason);
    throw error;
  } finally {
    clearTimeout(timer);
    call.signal.removeEventListener('abort', onClientAbort);
  }
  const ms = performance.now() - started;
  deps.record(provider, true, ms);

  // The client left while the answer was on its way: it will not receive it, so no charge.
  if (call.signal.aborted) {
    await release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }

  const { inputTokens, outputTokens } = result.usage;
  // Some providers send zeros when the upstream gave no usage; a real call always has input
  // tokens (content is never empty), so zero input counts as "not reported".
  const reported = inputTokens ? (result.usage.totalTokens ?? inputTokens + (outputTokens ?? 0)) : undefined;
  // An upstream that reports no usage is charged the reserved worst case, never less than it may have used.
  const tokensUsed = reported ?? estimatedTokens;
  if (reported === undefined) logger.warn('ai: upstream reported no usage; charging the estimate', { requestId, provider, model });
  for (const w of result.warnings ?? []) logger.debug('ai: provider warning', { requestId, provider, warning: w.type });

  const data: GenerateTextOutput['data'] = {
    text: result.text,
    provider,
    model,
    finishReason: result.finishReason,
    usage: reported === undefined ? { inputTokens: null, outputTokens: null, totalTokens: null } : { inputTokens: inputTokens ?? null, outputTokens: outputTokens ?? null, totalTokens: reported },
    requestId,
  };
  const metadata = input.metadata ?? {};
  const costUsd = providers.models.estimateCostUsd(provider, model, inputTokens ?? Math.ceil((input.content.length + system.text.length) / 4), outputTokens ?? maxTokens);
  if (mode === 'platform') {
    const tokenUsage = await metering.settle(reservation!, { tokensUsed, provider, model, metadata, ...(costUsd !== undefined ? { costUsd } : {}) });
    logger.debug('ai: generateText', { requestId, provider, model, mode, usage: tokensUsed, ms: Math.round(ms) });
    return { success: true, data, tokenUsage };
  }
  const estimatedCostUsd = costUsd ?? 0;
  try {
    await metering.recordByokUsage({ identity: call.identity, provider, model, tokensUsed, estimatedCostUsd, metadata, requestId });
  } catch (err) {
    // The caller paid its provider directly; a lost usage record must not cost it the answer.
    logger.warn('ai: recording BYOK usage failed', { requestId, error: err instanceof Error ? err.message : String(err) });
  }
  logger.debug('ai: generateText', { requestId, provider, model, mode, usage: tokensUsed, ms: Math.round(ms) });
  return { success: true, data, usageInfo: { tokensUsed, estimatedCostUsd } };
}
