import { loadAiSdk } from './aiSdk.js';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { SettledUsage } from '../metering/Metering.js';
import { prepareCall, sdkCallArgs, type CallDeps, type PreparedCall, type TextCall, type TextCallInput } from './prepareCall.js';
import { accountCall, textPricing, type CallUsage } from './accountCall.js';
import { attemptLoop, attemptPath, settleLoop, type Served } from './attemptLoop.js';
import { assertValidCallSchemas, parseOutput } from './validateOutput.js';
import { loadUpstreamFetch } from './upstreamFetch.js';
import { callTargets, type Attempt, type Target } from './callTargets.js';
import { reachableModels, resolveCallModel } from './callModel.js';
import type { WireRequest } from './passThrough/wireRequest.js';
import type { CachedAnswer } from './cache/ResponseCache.js';
import { answersWithWire, servesForm, storedWire, type CallForm } from './cacheForm.js';
import { assertPromptMayUse, type ResolvedSystemPrompt } from './SystemPromptStore.js';
import { requestIdV7 } from '../../lib/requestIdV7.js';
import { sdkCachedInput, usageTokens } from './tokenCount.js';
import { forwardedRequest } from './passThrough/sendPassThrough.js';
import { fetchWireAnswer, type WireAnswer } from './passThrough/fetchWireAnswer.js';
import type { ToolCallOut } from './toolCallOut.js';
import { stopSequenceOf } from './stopSequence.js';

export type { ToolCallOut };

export { estimateTokens } from './callModel.js';

/** ai.generateText input, as in the spec plus the chat inputs (provider already un-aliased). */
export type GenerateTextInput = TextCallInput;
export type GenerateTextCall = TextCall;
export type GenerateTextDeps = CallDeps;

export interface GenerateTextOutput {
  success: true;
  data: {
    text: string;
    provider: ProviderId;
    model: string;
    finishReason: string;
    /**
     * The stop sequence the model stopped on (finishReason `stop`), when its provider names it
     * (stopSequence.ts: Anthropic, Bedrock's Anthropic models); absent otherwise.
     */
    stopSequence?: string;
    usage: { inputTokens: number | null; outputTokens: number | null; totalTokens: number | null };
    requestId: string;
    /** Present when tools were offered and the model called some. */
    toolCalls?: ToolCallOut[];
    /** Structured output (request `output`): the answer parsed and validated against the schema. */
    object?: unknown;
    /** Targets tried before the one that served (`provider`/`model` above), with why they did not. */
    attempts?: Attempt[];
    /**
     * The answer came from another target than the one asked for (a fallback, a route's retry),
     * which `provider` / `model` name: set with `attempts`, and on a cache hit of such an answer,
     * which tried no target (the /v1 answer's `model` then names that target too).
     */
    fallback?: true;
    /** Whether the response cache served the answer (present when the cache was consulted: `ai.cache`). */
    cache?: 'hit' | 'miss';
  };
  /** Platform-paid calls. */
  tokenUsage?: SettledUsage;
  /** BYOK calls. */
  usageInfo?: { tokensUsed: number; estimatedCostUsd: number };
  /**
   * A /v1 call served on the pass-through path (docs/ai.md#pass-through): the upstream answer's
   * bytes, which the wire format's endpoint returns as they are. Never set for other callers.
   */
  passThrough?: { body: Uint8Array; contentType: string };
}

/** One attempt's answer, from either path: what the engine reads of it (and, pass-through, its bytes). */
interface Answer {
  text: string;
  toolCalls: ReadonlyArray<{ toolCallId: string; toolName: string; input: unknown }>;
  finishReason: string;
  stopSequence?: string | undefined;
  usage:
    | {
        inputTokens?: number | undefined;
        outputTokens?: number | undefined;
        totalTokens?: number | undefined;
        /** What of the input is billed above its price (WireUsage: Anthropic's cache writes on the pass-through path). */
        cacheWriteExtra?: number | undefined;
        /** What of the input was read from the provider's prompt cache (WireUsage.cachedInputTokens, sdkCachedInput). */
        cachedInputTokens?: number | undefined;
      }
    | undefined;
  warnings: ReadonlyArray<{ type: string }>;
  wire?: WireAnswer;
}

/**
 * One ai.generateText call: prepareCall (checks, prompt, billing's hold), the attempt loop
 * (targets, fallbacks, breaker), then the accounting step (settle) or the hold's release.
 *
 * Charging rule (see docs/ai.md): a platform-paid call is charged only when the upstream answer
 * is complete while the client is still connected. Any failure, timeout or client disconnect
 * before that releases the whole reservation.
 */
export async function runGenerateText(
  deps: GenerateTextDeps,
  input: GenerateTextInput,
  call: GenerateTextCall,
): Promise<GenerateTextOutput> {
  const { logger } = deps;
  await assertValidCallSchemas(input);
  const cached = await lookUpCall(deps, input, call, 'plain');
  if (cached?.hit) return serveHit(deps, cached.hit, input, call, 'plain');
  const prepared = await prepareCall(deps, input, call);
  const { hold } = prepared;
  let served: Served<Target, Answer>;
  try {
    served = await settleLoop(
      // biome-ignore lint/correctness/useYield: attemptLoop takes a generator; a non-streamed attempt yields nothing, it returns its result
      attemptLoop(deps, callTargets(deps, prepared, call), call, async function* (t, ctx): AsyncGenerator<never, Answer, undefined> {
        const path = attemptPath(deps, t, input, call, 'caller');
        if (path.kind === 'pass-through') {
          const forwarded = forwardedRequest(call.wire!, path.endpoint, t.maxTokens);
          ctx.start();
          const wire = await fetchWireAnswer(path.endpoint, forwarded, ctx.signal);
          return { ...wire.summary, warnings: [], wire };
        }
        // Load the SDK, the provider and the HTTP client before the clock starts: on a cold server
        // the imports take hundreds of ms, and ai.timeoutMs is the time the upstream gets to answer.
        const [{ ai: sdk }, args] = await Promise.all([loadAiSdk(), sdkCallArgs(deps, t, input, ctx.signal), loadUpstreamFetch()]);
        ctx.start();
        if (ctx.signal.aborted) throw new Error('aborted before the upstream call');
        const r = await sdk.generateText(args);
        return {
          text: r.text,
          toolCalls: r.toolCalls,
          finishReason: r.finishReason,
          stopSequence: stopSequenceOf(r.finishReason, r.providerMetadata),
          usage: { inputTokens: r.usage.inputTokens, outputTokens: r.usage.outputTokens, cachedInputTokens: sdkCachedInput(r.usage) },
          warnings: r.warnings ?? [],
        };
      }),
    );
  } catch (err) {
    await hold.release(err instanceof CoreError ? String(err.details?.reason ?? err.appCode) : 'failed');
    throw err;
  }
  const result = served.value;
  // Only the target that answered is charged, under its provider and model.
  const p = served.target;
  const { provider, model, mode, requestId } = p;

  // The client left while the answer was on its way: it will not receive it, so no charge.
  if (call.signal.aborted) {
    await hold.release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }

  // Some providers send zeros when the upstream gave no usage (a real call always has input
  // tokens, so zero input counts as "not reported"); a hostile one sends negatives, fractions,
  // huge numbers: usage that cannot be read (tokenCount.ts), charged as none, at the hold.
  const reported = usageTokens(result.usage);
  const { inputTokens, outputTokens, cacheWriteExtra, cachedInputTokens } = reported === undefined ? {} : result.usage!;
  // An upstream that reports no usage is charged the reserved worst case, never less than it may have used.
  const tokensUsed = reported ?? p.estimatedTokens;
  if (reported === undefined)
    logger.warn('ai: upstream reported no usage; charging the estimate', {
      requestId,
      provider,
      model,
      path: result.wire ? 'pass-through' : 'sdk',
    });
  for (const w of result.warnings) logger.debug('ai: provider warning', { requestId, provider, warning: w.type });

  const data: GenerateTextOutput['data'] = {
    text: result.text,
    provider,
    model,
    finishReason: result.finishReason,
    usage:
      reported === undefined
        ? { inputTokens: null, outputTokens: null, totalTokens: null }
        : { inputTokens: inputTokens ?? null, outputTokens: outputTokens ?? null, totalTokens: reported },
    requestId,
  };
  if (result.stopSequence !== undefined) data.stopSequence = result.stopSequence;
  if (served.attempts.length > 0) {
    data.attempts = served.attempts;
    data.fallback = true;
  }
  if (result.toolCalls.length > 0)
    data.toolCalls = result.toolCalls.map((t) => ({ toolCallId: t.toolCallId, toolName: t.toolName, input: t.input }));
  // The upstream did the work: it is paid for even when the answer fails the schema below.
  // Settled before the answer is written, on both paths: an answer the client has is a charge the
  // store has (a kill -9 between the two would otherwise leave an answered call to the hold's expiry,
  // which releases it: a free call).
  const usage: CallUsage = {
    tokensUsed,
    inputTokens,
    outputTokens,
    ...(cacheWriteExtra ? { cacheWriteExtra } : {}),
    ...(cachedInputTokens ? { cachedInputTokens } : {}),
  };
  // Priced once: the figure recorded is the one the cache entry keeps (a hit is charged its ratio of it).
  const costUsd = textPricing(deps, p)(provider, model, usage);
  const charged = await accountCall(deps, hold, costUsd, call, { provider, model, metadata: input.metadata, route: p.route }, usage);
  logger.debug('ai: generateText', { requestId, provider, model, mode, usage: tokensUsed });
  if (input.output && !data.toolCalls) {
    const parsed = await parseOutput(result.text, input.output.schema);
    if (!parsed.ok) throw invalidOutput(parsed.reason, p, charged);
    data.object = parsed.value;
  }
  const out: GenerateTextOutput = { success: true, data, ...charged };
  if (result.wire) out.passThrough = { body: result.wire.body, contentType: result.wire.contentType };
  if (cached) {
    data.cache = 'miss';
    remember(deps, cached.key, out, 'plain', costUsd);
  }
  return out;
}

export { ownError } from './attemptLoop.js';

/** The model's structured answer failed validation (the call is charged: the upstream did the work). */
export function invalidOutput(reason: string, p: PreparedCall, charged: object): CoreError {
  return new CoreError('UPSTREAM_ERROR', `${p.provider} answered with output that fails the schema: ${reason}`, {
    details: { reason: 'invalid_output', provider: p.provider, requestId: p.requestId, ...charged },
  });
}

/** A call's place in the cache: its entry key, and the entry when there is one to serve. */
export interface CacheLookup {
  key: string;
  hit: CachedAnswer | undefined;
}

/**
 * Look a call up in the response cache (undefined: the cache is off for it). The model is
 * resolved first, with every model rule of the call (an API key's `models` rule included), so a
 * hit is never served to a caller who could not have made the call; a call with its own provider
 * key is not cached (its answer was paid on the caller's account).
 */
export async function lookUpCall(deps: CallDeps, input: TextCallInput, call: TextCall, form: CallForm): Promise<CacheLookup | undefined> {
  const { cache, config } = deps;
  if (!cache?.config.enabled || input.apiKey !== undefined) return undefined;
  const choice = resolveCallModel(deps, input, call.identity);
  const named = serverPrompts(deps, input);
  const key = cache.keyFor(
    {
      model: choice.route ? `route:${choice.route.name}` : `${choice.provider}/${choice.model}`,
      content: input.content,
      systemPrompt: input.systemPrompt,
      systemPromptText: named.length > 0 ? named.map((p) => p.text) : undefined,
      messages: input.messages,
      tools: input.tools,
      toolChoice: input.toolChoice,
      output: input.output,
      maxTokens: input.options?.maxTokens ?? config.ai.defaultMaxTokens,
      temperature: input.options?.temperature,
      sampling: samplingOf(input.options),
      wire: call.wire && wireKey(call.wire),
    },
    call.identity,
    input.cache,
  );
  if (!key) return undefined;
  if (input.cache === 'refresh') return { key, hit: undefined };
  // The entry names the target that served it (a route's other target, a fallback): it is served
  // only when this call could have been served by that target too, under every model rule of this
  // caller (an API key's `models` and `providers`, the server's allow list, the call's own
  // fallbacks); otherwise it is a miss, and the fresh answer replaces the entry. So is an entry
  // whose replay would lack what this call's own answer carries (cacheForm.ts).
  const servable = (hit: CachedAnswer) => {
    if (!servesForm(deps, input, call, form, hit)) return false;
    const own = { provider: choice.provider, model: choice.model };
    const reach = { identity: call.identity, maxTokens: input.options?.maxTokens ?? config.ai.defaultMaxTokens };
    const reachable = reachableModels(deps, own, input.fallbacks, reach, choice.route?.targets.slice(1));
    return reachable.some((t) => t.provider === hit.provider && t.model === hit.model);
  };
  return { key, hit: await cache.get(key, servable) };
}

/**
 * The server prompts (`@name`) a call names, in `systemPrompt` or in a system message, resolved
 * as buildPrompt resolves them: a hit is keyed by their texts (a prompt replaced at run time is a
 * miss, not the old prompt's answer) and served only where the call itself would be (an unknown
 * name is refused; assertPromptMayUse holds for each).
 */
function serverPrompts(deps: CallDeps, input: TextCallInput): ResolvedSystemPrompt[] {
  const texts = [input.systemPrompt, ...(input.messages ?? []).map((m) => (m.role === 'system' ? m.content : undefined))];
  return texts.flatMap((t) => {
    if (t === undefined) return [];
    const r = deps.prompts.resolve(t);
    return r.name === undefined ? [] : [r];
  });
}

/** The sampling options beyond temperature that a call sets, for its cache key (undefined: none). */
function samplingOf(options: TextCallInput['options']): unknown {
  if (!options) return undefined;
  const { topP, stopSequences, seed } = options;
  return topP === undefined && stopSequences === undefined && seed === undefined
    ? undefined
    : [topP ?? null, stopSequences ?? null, seed ?? null];
}

/** What of a /v1 request shapes its answer: all of it but the model (keyed above, resolved) and how it is delivered. */
function wireKey(wire: WireRequest): unknown {
  const { model: _model, stream: _stream, stream_options: _streamOptions, ...body } = wire.body;
  return [wire.format, body, wire.headers ?? null];
}

/**
 * Serve a cached answer: one hold and one settle for `ai.cache.chargeRatio` of the original call's
 * tokens and price (0 by default), recorded in the ledger as a cache hit (`metadata.cache: 'hit'`,
 * with the original `cachedTokensUsed`), then the answer as the call would have given it.
 */
export async function serveHit(
  deps: CallDeps,
  hit: CachedAnswer,
  input: TextCallInput,
  call: TextCall,
  form: CallForm,
): Promise<GenerateTextOutput> {
  const ratio = deps.cache!.config.chargeRatio;
  const tokensUsed = Math.ceil(hit.tokensUsed * ratio);
  const costUsd = hit.costUsd === undefined ? undefined : hit.costUsd * ratio;
  const requestId = requestIdV7();
  const named = serverPrompts(deps, input);
  const hold = await deps.metering.hold({
    identity: call.identity,
    ...(call.ip ? { ip: call.ip } : {}),
    requestId,
    provider: hit.provider,
    estimatedTokens: tokensUsed,
    ...(costUsd !== undefined ? { costUsd } : {}),
    byokAllowed: deps.providers.isByokProvider(hit.provider),
    serverPays: deps.providers.serverKey(hit.provider) !== undefined,
    mayPay: (mode) => {
      for (const p of named) assertPromptMayUse(p, mode);
    },
  });
  const charged = await accountCall(
    deps,
    hold,
    costUsd,
    call,
    { provider: hit.provider, model: hit.model, metadata: { ...input.metadata, cache: 'hit', cachedTokensUsed: hit.tokensUsed } },
    { tokensUsed },
  );
  const data: GenerateTextOutput['data'] = {
    text: hit.text,
    provider: hit.provider,
    model: hit.model,
    finishReason: hit.finishReason,
    usage: hit.usage,
    requestId,
    cache: 'hit',
  };
  if (hit.stopSequence !== undefined) data.stopSequence = hit.stopSequence;
  if (hit.fallback) data.fallback = true;
  if (hit.toolCalls) data.toolCalls = hit.toolCalls;
  if (hit.object !== undefined) data.object = hit.object;
  const out: GenerateTextOutput = { success: true, data, ...charged };
  // A passed-through answer is given again as the upstream sent it (its thinking blocks, logprobs …).
  if (hit.wire && answersWithWire(deps, call, form))
    out.passThrough = { body: Buffer.from(hit.wire.body, 'utf8'), contentType: hit.wire.contentType };
  return out;
}

/**
 * Finish reasons of a whole answer (the AI SDK's names, also the pass-through reader's): the model
 * stopped, reached maxTokens or called tools. Anything else (`other`: a stream the upstream closed
 * before its finish event; `error`; `content-filter`) is no answer to replay to later calls.
 */
const WHOLE_ANSWER = new Set(['stop', 'length', 'tool-calls']);

/**
 * Store a served call's answer for later calls (best effort, off the call's path), when it is a
 * whole answer the platform paid for. An answer paid with a caller's own key (BYOK: a stored key
 * billing chose, or a stored key a fallback used; a key in the request is not looked up at all)
 * was paid on the caller's account: it is never served to anyone, itself included, as a hit.
 */
export function remember(deps: CallDeps, key: string, out: GenerateTextOutput, form: CallForm, costUsd: number | undefined): void {
  if (out.usageInfo) return;
  if (!WHOLE_ANSWER.has(out.data.finishReason)) {
    deps.logger.debug('ai: response not cached: not a whole answer', {
      requestId: out.data.requestId,
      finishReason: out.data.finishReason,
    });
    return;
  }
  const wire = out.passThrough && storedWire(out.passThrough);
  if (wire === null) {
    deps.logger.debug('ai: response not cached: its body is not UTF-8 text', { requestId: out.data.requestId });
    return;
  }
  void deps.cache!.put(key, {
    ...answerOf(out, costUsd),
    ...(wire ? { wire } : {}),
    ...(form === 'stream' ? { streamed: true as const } : {}),
  });
}

/**
 * What a served call leaves in the cache: the answer and what it cost, nothing of the request.
 * `costUsd` is the price the call was recorded at (accountCall's, cache writes' surcharge and
 * reads' discount included), so a hit is charged its ratio of that, not of a price recomputed from
 * plain input and output.
 */
function answerOf(out: GenerateTextOutput, costUsd: number | undefined): CachedAnswer {
  const d = out.data;
  const tokensUsed = out.tokenUsage?.tokensUsed ?? out.usageInfo?.tokensUsed ?? d.usage.totalTokens ?? 0;
  return {
    text: d.text,
    finishReason: d.finishReason,
    ...(d.stopSequence !== undefined ? { stopSequence: d.stopSequence } : {}),
    ...(d.fallback ? { fallback: true as const } : {}),
    provider: d.provider,
    model: d.model,
    usage: d.usage,
    tokensUsed,
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(d.toolCalls ? { toolCalls: d.toolCalls } : {}),
    ...(d.object !== undefined ? { object: d.object } : {}),
    storedAt: Date.now(),
  };
}
