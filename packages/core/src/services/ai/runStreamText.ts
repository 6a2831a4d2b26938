import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { FinishEvent, TextEvent } from '../../kernel/streamEvents.js';
import { loadAiSdk } from './aiSdk.js';
import { mapUpstreamError } from './mapUpstreamError.js';
import { loadUpstreamFetch } from './upstreamFetch.js';
import { prepareCall, sdkCallArgs, type CallDeps, type TextCall, type TextCallInput } from './prepareCall.js';
import { invalidOutput, lookUpCall, remember, serveHit, type GenerateTextOutput, type ToolCallOut } from './runGenerateText.js';
import { callTargets, type Attempt, type Target } from './callTargets.js';
import { attemptLoop, attemptPath, ownError, type AttemptContext } from './attemptLoop.js';
import { accountCall, textPricing, type CallUsage } from './accountCall.js';
import { assertValidCallSchemas, parseOutput } from './validateOutput.js';
import { forwardedRequest, sendPassThrough, unreadableAnswer } from './passThrough/sendPassThrough.js';
import { WireStream } from './passThrough/WireStream.js';
import { sdkCachedInput, usageTokens } from './tokenCount.js';
import { RawStreamUsage } from './RawStreamUsage.js';
import { stopSequenceOf } from './stopSequence.js';
import type { PassThroughEndpoint } from './passThrough/wireRequest.js';

/**
 * What ai.streamText yields, in order: one `start`, text and tool calls as they come, one
 * `finish`; `text` and `finish` are the streamed-procedure contract (kernel/streamEvents.ts) the
 * pipeline reads. `start` names the target that serves the stream (after fallbacks, with the
 * `attempts` that did not, and `fallback` when it is not the target asked for, also on a cache hit of
 * such an answer), so it comes with the first output, not before the upstream answers.
 */
export type StreamEvent =
  | {
      type: 'start';
      requestId: string;
      provider: ProviderId;
      model: string;
      attempts?: Attempt[];
      fallback?: true;
      cache?: 'hit' | 'miss';
    }
  | TextEvent
  | ({ type: 'tool-call' } & ToolCallOut)
  /** The same result ai.generateText returns (usage, charge, tool calls, object). */
  | FinishEvent<GenerateTextOutput>
  /**
   * Bytes of a pass-through answer's event stream, for the caller as they are (docs/ai.md#pass-through;
   * /v1 only). Such a stream has no `start` and no `text` events, and its `finish` result has no text.
   */
  | {
      type: 'wire';
      bytes: Uint8Array;
      contentType: string;
      requestId: string;
      provider: ProviderId;
      model: string;
      /** Whole events passed on so far, these bytes included (a Responses stream's next sequence_number). */
      events: number;
    };

/** The failure of a stream whose upstream sent no event the SDK could read: no output, no usage. */
function streamNotRead(provider: ProviderId, contentType: string | undefined): CoreError {
  const json = contentType?.toLowerCase().startsWith('application/json');
  const message = json
    ? `${provider} answered the streamed request with plain JSON (content-type ${contentType}), not an event stream: the server ignores the stream flag. Nothing was charged; call without streaming, or fix the server`
    : `${provider}'s stream ended without any output or usage${contentType ? ` (content-type ${contentType})` : ''}. Nothing was charged`;
  return new CoreError('UPSTREAM_ERROR', message, { details: { reason: 'malformed_response', provider } });
}

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
 *   reports none but sent output; with neither output nor usage the stream fails, released);
 * - the client stops reading, disconnects, cancels, or the upstream fails or times out after
 *   output began: the provider's usage when the upstream had already reported it, otherwise the
 *   estimated input plus the UTF-8 byte count of all output received so far (every token is at
 *   least one byte, so this never undercounts output), capped at the reservation; the rest is
 *   released. A pass-through stream counts the output its forwarded events carried and takes the
 *   input it reported by then (Anthropic's message_start); cut by the upstream before its usage
 *   event, it is settled at the hold (docs/ai.md#pass-through);
 * - the client leaves after the upstream request went out but before any output: the
 *   estimated input is charged;
 * - the upstream failed before any output (refused, unreachable, timed out): the whole
 *   reservation is released, as for generateText.
 */
export async function runStreamText(
  deps: CallDeps,
  input: TextCallInput,
  call: TextCall,
): Promise<AsyncGenerator<StreamEvent, void, undefined>> {
  const { config, logger } = deps;
  const ai = config.ai;
  await assertValidCallSchemas(input);
  // A cached answer is replayed as a stream (charged ai.cache.chargeRatio of the original, now).
  const cached = await lookUpCall(deps, input, call, 'stream');
  if (cached?.hit) return replayStream(await serveHit(deps, cached.hit, input, call, 'stream'));
  const p = await prepareCall(deps, input, call);
  const { requestId, hold } = p;
  const targets = callTargets(deps, p, call);
  const pricing = textPricing(deps, p);
  /** The target being tried; the one that served the stream is the one charged. */
  let cur: Target = p;

  let accounted = false;
  /** The price the stream was settled at (priced once: the response cache keeps the same figure). */
  let costUsd: number | undefined;
  /**
   * Settle or release, once, whatever ends the stream. `produced`: UTF-8 bytes of the output received before the stream ended early;
   * `input`: the
   * input tokens the upstream reported by then (else the estimate).
   */
  const account = async (how: { usage?: CallUsage; produced?: number; input?: number | undefined; reason: string }) => {
    if (accounted) return undefined;
    accounted = true;
    const served = { provider: cur.provider, model: cur.model, metadata: input.metadata, route: cur.route };
    if (how.usage) {
      costUsd = pricing(cur.provider, cur.model, how.usage);
      return accountCall(deps, hold, costUsd, call, served, how.usage);
    }
    if (how.produced === undefined) {
      await hold.release(how.reason);
      return undefined;
    }
    const tokensUsed = Math.min(p.estimatedTokens, (how.input ?? p.inputEstimate) + how.produced);
    logger.debug('ai: stream ended early; charging the upper bound of what was produced', { requestId, reason: how.reason, tokensUsed });
    try {
      return await accountCall(deps, hold, pricing(cur.provider, cur.model, { tokensUsed }), call, served, { tokensUsed });
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
    let produced = '';
    /** Tool calls whose arguments arrived as deltas (counted in `produced` as they came). */
    const streamedInput = new Set<string>();
    let responded = false;
    let upstreamStarted = false;
    let usage: CallUsage | undefined;
    const toolCalls: ToolCallOut[] = [];
    let finishReason = 'unknown';
    /** The stop sequence the served answer stopped on, when its provider named it (stopSequence.ts). */
    let stopSequence: string | undefined;
    let text = '';
    let startSent = false;
    /** The pass-through stream being read, when the attempt took that path. */
    let wire: WireStream | undefined;
    /** `start`, naming the target that serves: sent with its first output (or before `finish`). */
    const startEvent = (t: Target, attempts: readonly Attempt[]): StreamEvent => {
      startSent = true;
      return {
        type: 'start',
        requestId,
        provider: t.provider,
        model: t.model,
        ...(attempts.length > 0 ? { attempts: [...attempts], fallback: true as const } : {}),
        ...(cached ? { cache: 'miss' as const } : {}),
      };
    };
    /** A pass-through stream: the upstream's bytes as they come, read for its usage on the way (WireStream). */
    async function* wireAttempt(
      t: Target,
      endpoint: PassThroughEndpoint,
      ctx: AttemptContext,
    ): AsyncGenerator<StreamEvent, void, undefined> {
      const forwarded = forwardedRequest(call.wire!, endpoint, t.maxTokens);
      ctx.start();
      upstreamStarted = !ctx.signal.aborted;
      const res = await sendPassThrough(endpoint, forwarded, ctx.signal);
      const contentType = res.headers.get('content-type') ?? undefined;
      if (!contentType?.toLowerCase().startsWith('text/event-stream') || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        throw streamNotRead(t.provider, contentType);
      }
      const ws = new WireStream(endpoint.format, forwarded.addedUsage);
      wire = ws;
      const send = (bytes: Uint8Array): StreamEvent => {
        ctx.commit();
        responded = true;
        startSent = true;
        return { type: 'wire', bytes, contentType, requestId, provider: t.provider, model: t.model, events: ws.events };
      };
      // The opening events (no output yet: WireStream.started) are held back, as the SDK path sends
      // nothing before the first output: an upstream that fails or stalls before it may still fall back.
      let opening: Uint8Array[] = [];
      const flush = (): StreamEvent => {
        const bytes = opening.length === 1 ? opening[0]! : Buffer.concat(opening);
        opening = [];
        return send(bytes);
      };
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          ctx.touch();
          const out = ws.push(chunk);
          if (out) opening.push(out);
          if (ws.started && opening.length > 0) yield flush();
        }
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        throw await unreadableAnswer(endpoint, res.status, err, 'lost');
      }
      const rest = ws.end();
      if (rest) opening.push(rest);
      // A stream that ended with its opening events only (no output, no usage) is no answer: as on the SDK path.
      if (opening.length > 0 && (ws.started || ws.usage)) yield flush();
      if (!responded && !ws.usage) throw streamNotRead(t.provider, contentType);
      usage = wireUsage(ws, t);
    }

    /**
     * What a stream the client left early produced: on the pass-through path the output its
     * events carried and the input usage already reported (Anthropic's `message_start`), or its
     * full usage when that went by; on the SDK path the output the SDK yielded.
     */
    const producedSoFar = (): { usage?: CallUsage; produced: number; input?: number | undefined } => {
      if (!wire) return { produced: utf8Bytes(produced) };
      const reported = reportedUsage(wire);
      if (reported) return { usage: reported, produced: 0 };
      return { produced: wire.outputBytes, input: wire.reportedInput };
    };

    /** The usage a pass-through stream reported, when it could be read (tokenCount.ts). */
    const reportedUsage = (ws: WireStream): CallUsage | undefined => {
      const tokensUsed = usageTokens(ws.usage);
      return tokensUsed === undefined
        ? undefined
        : {
            tokensUsed,
            inputTokens: ws.usage!.inputTokens,
            outputTokens: ws.usage!.outputTokens,
            ...(ws.usage!.cacheWriteExtra ? { cacheWriteExtra: ws.usage!.cacheWriteExtra } : {}),
            ...(ws.usage!.cachedInputTokens ? { cachedInputTokens: ws.usage!.cachedInputTokens } : {}),
          };
    };

    /**
     * What a pass-through stream the upstream ended is charged: its reported usage when it could be
     * read, also from a stream cut or closed after its usage event but before its terminal event
     * (each format sends its usage event last, with the whole answer's counts: OpenAI Chat's usage
     * chunk, Anthropic's `message_delta`; the Responses API's rides on its terminal event); else
     * (no usage, or usage that cannot be read) the hold, never free, with a warning.
     */
    const wireUsage = (ws: WireStream, t: Target): CallUsage => {
      const reported = reportedUsage(ws);
      const where = { requestId, provider: t.provider, model: t.model, bytes: ws.bytes };
      if (reported) {
        if (!ws.ended) logger.warn('ai: pass-through stream ended before its terminal event; charging its reported usage', where);
        return reported;
      }
      logger.warn('ai: pass-through stream gave no usage; charging the hold', where);
      return { tokensUsed: t.estimatedTokens };
    };

    /** One target's stream: its events as they come; "may still fall back" ends with the first output (ctx.commit). */
    async function* attempt(t: Target, ctx: AttemptContext): AsyncGenerator<StreamEvent, void, undefined> {
      cur = t;
      wire = undefined;
      // Whether this attempt's request went out: set where it is sent, unless the client (or the
      // timeout) aborted it first, while the SDK, the provider or the target were being readied;
      // an aborted fetch sends nothing, and a client that left before any request pays nothing.
      // An earlier attempt's request failed without output, which costs nothing either.
      upstreamStarted = false;
      stopSequence = undefined;
      const path = attemptPath(deps, t, input, call, cached ? 'caller-and-stream-cache' : 'caller');
      if (path.kind === 'pass-through') {
        yield* wireAttempt(t, path.endpoint, ctx);
        return;
      }
      const res = sdk.streamText({
        ...(await sdkCallArgs(deps, t, input, ctx.signal)),
        // The provider's own events, read for their usage (RawStreamUsage: a repeated usage event never lowers the charge).
        includeRawChunks: true,
        // Errors arrive as stream parts; without this the SDK also prints them.
        onError: () => undefined,
      });
      const raw = new RawStreamUsage();
      ctx.start();
      upstreamStarted = !ctx.signal.aborted;
      /** The upstream answer's content type (from the step's response metadata), to say what came instead of a stream. */
      let contentType: string | undefined;
      /** The step's provider metadata (the `finish` event has none): where a provider names the stop sequence. */
      let providerMetadata: unknown;
      for await (const part of res.fullStream) {
        ctx.touch();
        if (part.type === 'raw') raw.note(part.rawValue);
        else if (part.type === 'text-delta') {
          // An empty delta (some providers open with one) is no output: a fallback is still possible.
          if (part.text === '') continue;
          ctx.commit();
          responded = true;
          if (!startSent) yield startEvent(t, ctx.attempts);
          produced += part.text;
          text += part.text;
          yield { type: 'text', delta: part.text };
        } else if (part.type === 'tool-call') {
          ctx.commit();
          responded = true;
          if (!startSent) yield startEvent(t, ctx.attempts);
          const tc = { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
          // A call whose arguments came as deltas has them counted already: its id and name only.
          produced += streamedInput.has(tc.toolCallId)
            ? JSON.stringify({ toolCallId: tc.toolCallId, toolName: tc.toolName })
            : JSON.stringify(tc);
          toolCalls.push(tc);
          yield { type: 'tool-call', ...tc };
        } else if (part.type === 'tool-input-delta') {
          ctx.commit();
          responded = true;
          streamedInput.add(part.id);
          produced += part.delta;
        } else if (part.type === 'finish-step') {
          contentType = part.response.headers?.['content-type'];
          providerMetadata = part.providerMetadata;
        } else if (part.type === 'finish') {
          finishReason = part.finishReason;
          stopSequence = stopSequenceOf(part.finishReason, providerMetadata);
          // Each count at least the largest a usage event reported (the SDK keeps the last one).
          const sdkUsage = usageTokens(part.totalUsage) === undefined ? undefined : part.totalUsage;
          const u = sdkUsage
            ? { inputTokens: Math.max(sdkUsage.inputTokens!, raw.input), outputTokens: Math.max(sdkUsage.outputTokens ?? 0, raw.output) }
            : part.totalUsage;
          const cachedInputTokens = sdkUsage && sdkCachedInput(sdkUsage);
          const reported = usageTokens(u);
          // Nothing came and nothing was reported: not an answer but a reply the SDK could not
          // read as a stream (a server that ignores the stream flag answers plain JSON, which
          // parses as zero events). Failing it releases the hold; ending "successfully" would
          // charge the worst case for an empty answer.
          if (!responded && reported === undefined) throw streamNotRead(t.provider, contentType);
          // Counts that cannot be read price the call at its bounds, as they charge it the hold.
          usage =
            reported === undefined
              ? { tokensUsed: t.estimatedTokens }
              : {
                  tokensUsed: reported,
                  inputTokens: u.inputTokens,
                  outputTokens: u.outputTokens,
                  ...(cachedInputTokens ? { cachedInputTokens } : {}),
                };
          if (reported === undefined)
            logger.warn('ai: upstream reported no usage; charging the estimate', { requestId, provider: t.provider, model: t.model });
        } else if (part.type === 'error') {
          // The same reply as above on wires whose SDK reports an event-less body as an error
          // (Anthropic's: "no output generated"): said the same way.
          if (!responded && sdk.NoOutputGeneratedError.isInstance(part.error)) throw streamNotRead(t.provider, contentType);
          throw part.error;
        } else if (part.type === 'abort') {
          throw new Error('aborted');
        }
      }
      if (!usage) throw new Error('the stream ended without a finish event');
    }

    try {
      const served = yield* attemptLoop(deps, targets, call, attempt, { idleTimeout: true });
      const t = served.target;
      if (!startSent) yield startEvent(t, served.attempts);
      const charged = (await account({ usage: usage!, reason: 'completed' }))!;
      const data: GenerateTextOutput['data'] = {
        text,
        provider: t.provider,
        model: t.model,
        finishReason,
        usage: usage!.inputTokens
          ? { inputTokens: usage!.inputTokens, outputTokens: usage!.outputTokens ?? null, totalTokens: usage!.tokensUsed }
          : { inputTokens: null, outputTokens: null, totalTokens: null },
        requestId,
      };
      if (stopSequence !== undefined) data.stopSequence = stopSequence;
      if (served.attempts.length > 0) {
        data.attempts = served.attempts;
        data.fallback = true;
      }
      if (toolCalls.length > 0) data.toolCalls = toolCalls;
      if (input.output && toolCalls.length === 0) {
        const parsed = await parseOutput(text, input.output.schema);
        if (!parsed.ok) throw invalidOutput(parsed.reason, t, charged);
        data.object = parsed.value;
      }
      const result: GenerateTextOutput = { success: true, data, ...charged };
      if (cached) {
        data.cache = 'miss';
        remember(deps, cached.key, result, 'stream', costUsd);
      }
      yield { type: 'finish', result };
    } catch (err) {
      if (err instanceof CoreError && err.details?.reason === 'invalid_output') throw err;
      // The loop's failures are mapped already; anything else (a settle that failed) is mapped here.
      const error =
        ownError(err) ??
        (await mapUpstreamError(err, { provider: cur.provider, timedOut: false, timeoutMs: ai.timeoutMs, cancelled: call.signal.aborted }));
      const reason = String(error.details?.reason ?? error.appCode);
      logger.warn('ai: stream failed', { requestId, provider: cur.provider, model: cur.model, reason });
      // A client that leaves after the request went out pays for what it caused; an upstream
      // that failed before answering costs nothing.
      const charge = responded || (reason === 'cancelled' && upstreamStarted);
      // A pass-through stream that broke off after bytes went out: its usage if it came; else, left
      // by the client, what it forwarded (as on the SDK path); cut by the upstream, the hold.
      if (wire && responded && !usage && reason !== 'cancelled') usage = wireUsage(wire, cur);
      await account(usage ? { usage, reason } : charge ? { ...producedSoFar(), reason } : { reason });
      throw error;
    } finally {
      if (!accounted) {
        // The consumer stopped reading (return()): the loop stopped the upstream; charge what was produced.
        await account(
          usage ? { usage, reason: 'cancelled' } : upstreamStarted ? { ...producedSoFar(), reason: 'cancelled' } : { reason: 'cancelled' },
        );
      }
    }
  }
  return events();
}

/** Characters per replayed text event: a cached answer streams as a stream would, in pieces. */
const REPLAY_CHUNK = 64;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** A cached answer as ai.streamText's events: start, the text in pieces, tool calls, finish. */
export async function* replayStream(out: GenerateTextOutput): AsyncGenerator<StreamEvent, void, undefined> {
  const d = out.data;
  yield {
    type: 'start',
    requestId: d.requestId,
    provider: d.provider,
    model: d.model,
    ...(d.fallback ? { fallback: true } : {}),
    cache: 'hit',
  };
  for (let i = 0; i < d.text.length; ) {
    let end = Math.min(i + REPLAY_CHUNK, d.text.length);
    // Never between the two halves of a surrogate pair: each piece is text on its own, as an
    // upstream's are (a lone half is an invalid character to every client that is not JavaScript).
    if (end < d.text.length && isHighSurrogate(d.text.charCodeAt(end - 1))) end++;
    yield { type: 'text', delta: d.text.slice(i, end) };
    i = end;
  }
  for (const tc of d.toolCalls ?? []) yield { type: 'tool-call', ...tc };
  yield { type: 'finish', result: out };
}
