import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import { loadAiSdk } from './aiSdk.js';
import { mapUpstreamError } from './mapUpstreamError.js';
import { loadUpstreamFetch } from './upstreamFetch.js';
import { chargeCall, prepareCall, releaseCall, sdkCallArgs, type CallDeps, type TextCall, type TextCallInput } from './prepareCall.js';
import { invalidOutput, ownError, type GenerateTextOutput, type ToolCallOut } from './runGenerateText.js';
import { backoff, callTargets, isRetryable, readyTarget, type Attempt, type Target } from './withFallbacks.js';
import { assertValidCallSchemas, parseOutput } from './validateOutput.js';

/**
 * What ai.streamText yields, in order: one `start`, text and tool calls as they come, one
 * `finish`. `start` names the target that serves the stream (after fallbacks, with the
 * `attempts` that did not), so it comes with the first output, not before the upstream answers.
 */
export type StreamEvent =
  | { type: 'start'; requestId: string; provider: ProviderId; model: string; attempts?: Attempt[] }
  | { type: 'text'; delta: string }
  | ({ type: 'tool-call' } & ToolCallOut)
  /** The same result ai.generateText returns (usage, charge, tool calls, object). */
  | { type: 'finish'; result: GenerateTextOutput };

/** UTF-8 bytes of a string: the documented upper bound of the tokens it took to produce it. */
function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/**
 * One ai.streamText call. Checks, payer decision and the reservation happen before this
 * returns (so refusals are ordinary errors, before any upstream byte); the upstream call starts
 * when the stream is first read.
 *
 * Charging rule (docs/ai.md, "Streaming and metering"), settled exactly once:
 * - the stream completes: the provider's reported usage (the reserved worst case when it
 *   reports none);
 * - the client stops reading, disconnects, cancels, or the upstream fails or times out after
 *   output began: the provider's usage when the upstream had already reported it, otherwise the
 *   estimated input plus the UTF-8 byte count of all output received so far (every token is at
 *   least one byte, so this never undercounts output), capped at the reservation; the rest is
 *   released;
 * - the client leaves after the upstream request went out but before any output: the
 *   estimated input is charged;
 * - the upstream failed before any output (refused, unreachable, timed out): the whole
 *   reservation is released, as for generateText.
 */
export async function runStreamText(deps: CallDeps, input: TextCallInput, call: TextCall): Promise<AsyncGenerator<StreamEvent, void, undefined>> {
  const { config, logger } = deps;
  const ai = config.ai;
  await assertValidCallSchemas(input);
  const p = await prepareCall(deps, input, call);
  const { requestId } = p;
  const targets = callTargets(deps, p, input, call);
  /** The target being tried; the one that served the stream is the one charged. */
  let cur: Target = p;

  let accounted = false;
  /** Settle or release, once, whatever ends the stream. */
  const account = async (how: { usage?: { tokensUsed: number; inputTokens?: number | undefined; outputTokens?: number | undefined }; produced?: string; reason: string }) => {
    if (accounted) return undefined;
    accounted = true;
    if (how.usage) return chargeCall(deps, cur, input, call, how.usage);
    if (how.produced === undefined) {
      await releaseCall(deps, p, how.reason);
      return undefined;
    }
    const tokensUsed = Math.min(p.estimatedTokens, p.inputEstimate + utf8Bytes(how.produced));
    logger.debug('ai: stream ended early; charging the upper bound of what was produced', { requestId, reason: how.reason, tokensUsed });
    try {
      return await chargeCall(deps, cur, input, call, { tokensUsed });
    } catch (err) {
      logger.error('ai: settling a partial stream failed', { requestId, error: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
  };

  // A stream nobody reads (the client left before it started) must not keep its hold.
  let started = false;
  const onEarlyAbort = () => {
    if (!started) void account({ reason: 'cancelled' });
  };
  call.signal.addEventListener('abort', onEarlyAbort, { once: true });

  async function* events(): AsyncGenerator<StreamEvent, void, undefined> {
    started = true;
    call.signal.removeEventListener('abort', onEarlyAbort);
    if (accounted || call.signal.aborted) {
      await account({ reason: 'cancelled' });
      throw new CoreError('CANCELLED', 'the request was cancelled by the client');
    }
    // Loading the SDK and the HTTP client (first call only) is not the upstream's time.
    const [{ ai: sdk }] = await Promise.all([loadAiSdk(), loadUpstreamFetch()]);
    let ac = new AbortController();
    let timedOut = false;
    // An idle timeout: a stream may run long, but not stall for timeoutMs.
    let timer = setTimeout(() => ((timedOut = true), ac.abort()), ai.timeoutMs);
    const touch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => ((timedOut = true), ac.abort()), ai.timeoutMs);
    };
    const onClientAbort = () => ac.abort();
    call.signal.addEventListener('abort', onClientAbort, { once: true });
    const began = performance.now();
    let produced = '';
    let responded = false;
    let upstreamStarted = false;
    let usage: { tokensUsed: number; inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined;
    const toolCalls: ToolCallOut[] = [];
    let finishReason = 'unknown';
    let text = '';
    const attempts: Attempt[] = [];
    let startSent = false;
    /** The provider whose half-open trial this stream holds, until it reports a verdict. */
    let trialOf: ProviderId | undefined;
    /** The stream ends without a verdict on its trial (cancelled, non-retryable): hand the claim back. */
    const endTrial = async () => {
      if (trialOf) await deps.breaker?.endTrial(trialOf);
      trialOf = undefined;
    };
    /** `start`, naming the target that serves: sent with its first output (or before `finish`). */
    const startEvent = (t: Target): StreamEvent => {
      startSent = true;
      return { type: 'start', requestId, provider: t.provider, model: t.model, ...(attempts.length > 0 ? { attempts: [...attempts] } : {}) };
    };
    /** One target's stream: yields its events; returns the failure (undefined when it finished). */
    async function* attempt(t: Target): AsyncGenerator<StreamEvent, unknown, undefined> {
      let failure: unknown;
      try {
        const res = sdk.streamText({
          ...(await sdkCallArgs(deps, t, input, ac.signal)),
          // Errors arrive as stream parts; without this the SDK also prints them.
          onError: () => undefined,
        });
        upstreamStarted = true;
        for await (const part of res.fullStream) {
          touch();
          if (part.type === 'text-delta') {
            // An empty delta (some providers open with one) is no output: a fallback is still possible.
            if (part.text === '') continue;
            if (!startSent) yield startEvent(t);
            responded = true;
            produced += part.text;
            text += part.text;
            yield { type: 'text', delta: part.text };
          } else if (part.type === 'tool-call') {
            if (!startSent) yield startEvent(t);
            responded = true;
            const tc = { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
            produced += JSON.stringify(tc);
            toolCalls.push(tc);
            yield { type: 'tool-call', ...tc };
          } else if (part.type === 'tool-input-delta') {
            responded = true;
            produced += part.delta;
          } else if (part.type === 'finish') {
            finishReason = part.finishReason;
            const u = part.totalUsage;
            const reported = u.inputTokens ? (u.totalTokens ?? u.inputTokens + (u.outputTokens ?? 0)) : undefined;
            usage = { tokensUsed: reported ?? t.estimatedTokens, inputTokens: u.inputTokens, outputTokens: u.outputTokens };
            if (reported === undefined) logger.warn('ai: upstream reported no usage; charging the estimate', { requestId, provider: t.provider, model: t.model });
          } else if (part.type === 'error') {
            failure = part.error;
            break;
          } else if (part.type === 'abort') {
            failure = new Error('aborted');
            break;
          }
        }
      } catch (err) {
        failure = err;
      }
      return failure;
    }

    try {
      // Fallbacks: the next target is tried only while nothing has reached the client.
      let lastErr: CoreError | undefined;
      for (let i = 0; ; i++) {
        const planned = targets[i]!;
        const hasNext = i < targets.length - 1;
        const many = targets.length > 1;
        const skip = (reason: string) => {
          attempts.push({ provider: planned.provider, model: planned.model, reason });
          if (hasNext) return;
          // Nothing left to try: the last upstream failure, else why nothing could be tried.
          if (lastErr) throw new CoreError(lastErr.appCode, lastErr.message, { details: { ...lastErr.details, attempts }, ...(lastErr.headers ? { headers: lastErr.headers } : {}) });
          throw new CoreError('UNAVAILABLE', 'every target of this call is unavailable (circuit open)', { details: { reason, attempts } });
        };
        const gate = many && deps.breaker ? await deps.breaker.admit(planned.provider) : 'pass';
        if (gate === 'skip') {
          skip('circuit_open');
          deps.metrics?.fallback(planned.provider, planned.model);
          continue;
        }
        if (gate === 'trial') trialOf = planned.provider;
        const ready = await readyTarget(deps, planned, call);
        if (!ready) {
          await endTrial();
          skip('no_stored_key');
          continue;
        }
        cur = ready;
        timedOut = false;
        ac = new AbortController();
        if (call.signal.aborted) ac.abort();
        touch();
        const failure = yield* attempt(cur);
        if (failure === undefined && usage) {
          trialOf = undefined;
          if (many) await deps.breaker?.success(cur.provider);
          break;
        }
        const mapped = ownError(failure) ?? await mapUpstreamError(failure ?? new Error('no finish event'), { provider: cur.provider, timedOut, timeoutMs: ai.timeoutMs, cancelled: call.signal.aborted });
        if (!responded && isRetryable(mapped) && hasNext && !call.signal.aborted) {
          const reason = String(mapped.details?.reason);
          deps.record(cur.provider, false, performance.now() - began, reason);
          trialOf = undefined;
          await deps.breaker?.failure(cur.provider, reason);
          attempts.push({ provider: cur.provider, model: cur.model, reason });
          lastErr = mapped;
          deps.metrics?.fallback(cur.provider, cur.model);
          await new Promise((r) => setTimeout(r, backoff(deps, attempts.length)));
          continue;
        }
        // Counted on every call, as generateText does: only skipping needs fallbacks.
        if (isRetryable(mapped)) {
          trialOf = undefined;
          await deps.breaker?.failure(cur.provider, String(mapped.details?.reason));
        }
        throw failure ?? new Error('the stream ended without a finish event');
      }
      const served = cur;
      deps.record(served.provider, true, performance.now() - began);
      if (!startSent) yield startEvent(served);
      const charged = (await account({ usage: usage!, reason: 'completed' }))!;
      const data: GenerateTextOutput['data'] = {
        text,
        provider: served.provider,
        model: served.model,
        finishReason,
        usage: usage!.inputTokens ? { inputTokens: usage!.inputTokens, outputTokens: usage!.outputTokens ?? null, totalTokens: usage!.tokensUsed } : { inputTokens: null, outputTokens: null, totalTokens: null },
        requestId,
      };
      if (attempts.length > 0) data.attempts = attempts;
      if (toolCalls.length > 0) data.toolCalls = toolCalls;
      if (input.output && toolCalls.length === 0) {
        const parsed = await parseOutput(text, input.output.schema);
        if (!parsed.ok) throw invalidOutput(parsed.reason, served, charged);
        data.object = parsed.value;
      }
      yield { type: 'finish', result: { success: true, data, ...charged } };
    } catch (err) {
      if (err instanceof CoreError && err.details?.reason === 'invalid_output') throw err;
      const own = ownError(err);
      const error = own ?? (await mapUpstreamError(err, { provider: cur.provider, timedOut, timeoutMs: ai.timeoutMs, cancelled: call.signal.aborted }));
      const reason = String(error.details?.reason ?? error.appCode);
      if (!own && reason !== 'cancelled') deps.record(cur.provider, false, performance.now() - began, reason);
      logger.warn('ai: stream failed', { requestId, provider: cur.provider, model: cur.model, reason });
      // A client that leaves after the request went out pays for what it caused; an upstream
      // that failed before answering costs nothing.
      const charge = responded || (reason === 'cancelled' && upstreamStarted);
      await account(usage ? { usage, reason } : charge ? { produced, reason } : { reason });
      throw error;
    } finally {
      await endTrial();
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onClientAbort);
      if (!accounted) {
        // The consumer stopped reading (return()): stop the upstream and charge what was produced.
        ac.abort();
        await account(usage ? { usage, reason: 'cancelled' } : upstreamStarted ? { produced, reason: 'cancelled' } : { reason: 'cancelled' });
      }
    }
  }
  return events();
}
