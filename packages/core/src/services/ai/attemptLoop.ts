import { setTimeout as sleep } from 'node:timers/promises';
import { CoreError } from '../../kernel/CoreError.js';
import { isRetryable, readyTarget, type Attempt, type CallTarget } from './callTargets.js';
import { failedUpstreamUrl, mapUpstreamError } from './mapUpstreamError.js';
import type { CallDeps, PreparedCall, TextCall, TextCallInput } from './prepareCall.js';
import type { AttemptPath } from './passThrough/wireRequest.js';
import { routeExhausted } from './routing/Routing.js';
import type { RouteOutcome } from './routing/RouteSlot.js';

/** What one attempt gets from the loop. */
export interface AttemptContext {
  /** Aborted when the client leaves or the attempt times out; give it to the upstream call. */
  readonly signal: AbortSignal;
  /** The upstream's clock starts now (after SDK and provider loading, which are not its time). */
  start(): void;
  /** Output arrived: an idle timeout (streams) starts over. */
  touch(): void;
  /** Something reached the client: from now on a failure ends the call, no fallback. Call it before yielding. */
  commit(): void;
  /** Targets tried before this one, with why they did not serve. */
  readonly attempts: readonly Attempt[];
}

/** One upstream call to one target: yields what the client gets as it comes, returns the result. */
export type AttemptRun<T extends CallTarget, E, R> = (target: T, ctx: AttemptContext) => AsyncGenerator<E, R, undefined>;

export interface Served<T, R> {
  value: R;
  /** The target that served: the one charged. */
  target: T;
  attempts: Attempt[];
}

export interface LoopOptions {
  /** The timeout restarts with each output (`touch`): a stream may run long, but not stall. Default: one timeout for the whole attempt. */
  idleTimeout?: boolean;
}

/** A CoreError of ours thrown inside the AI SDK (attachment refusal), possibly wrapped by it. */
export function ownError(err: unknown): CoreError | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (e instanceof CoreError) return e;
  }
  return undefined;
}

/**
 * The wait before the next target: `backoffMs` doubled per attempt, capped, with jitter (many clients that failed together do not retry
 * together).
 */
export function backoff(deps: Pick<CallDeps, 'config'>, attempt: number): number {
  const { backoffMs, maxBackoffMs } = deps.config.ai.retry;
  const wait = Math.min(maxBackoffMs, backoffMs * 2 ** attempt);
  return wait / 2 + Math.random() * (wait / 2);
}

/**
 * The one attempt loop of every AI call (generate, stream, embed): try the targets in order
 * until one serves. Per target: the circuit breaker (consulted when there is more than one
 * target; an open provider is skipped), the stored key of a BYOK fallback, a timeout, the
 * client's abort, the upstream failure mapped to a CoreError, the provider's call statistics.
 * A retryable failure moves on to the next target after an abortable backoff (`ai.retry`), but
 * only while nothing has reached the client (`commit`); any other failure ends the call. Every
 * target left for a later one counts once in `ai_backend_upstream_fallbacks_total`.
 */
export async function* attemptLoop<T extends CallTarget, E, R>(
  deps: CallDeps,
  targets: T[],
  call: TextCall,
  run: AttemptRun<T, E, R>,
  opts: LoopOptions = {},
): AsyncGenerator<E, Served<T, R>, undefined> {
  const { breaker, metrics, logger } = deps;
  const { timeoutMs } = deps.config.ai;
  const attempts: Attempt[] = [];
  const many = targets.length > 1;
  let sent = false;
  let last: CoreError | undefined;
  /** The shortest Retry-After among the targets that answered 429: when the first of them takes calls again. */
  let soonestRetry: number | undefined;
  for (const [i, planned] of targets.entries()) {
    const hasNext = i < targets.length - 1;
    /**
     * Whether this attempt speaks for the provider and the deployment: it goes out with the
     * server's key. A caller's own key (BYOK: in the request, in the header, or stored) uses none
     * of the deployment's rpm and is judged by its own outcome only: its rate limit or quota is
     * its own, and must not open the provider's breaker or cool a route deployment for every
     * platform-paid call.
     */
    const judged = !planned.storedKey && planned.apiKey === deps.providers.serverKey(planned.provider);
    // A route target: skipped while it cools down or its rpm is used up; else counted in flight.
    const routing = planned.route ? deps.routing : undefined;
    const admitted = routing ? await routing.admit(planned, judged) : 'pass';
    if (admitted !== 'pass') {
      attempts.push({ provider: planned.provider, model: planned.model, reason: admitted });
      if (hasNext) metrics?.fallback(planned.provider, planned.model);
      continue;
    }
    const gate = many && breaker ? await breaker.admit(planned.provider) : 'pass';
    if (gate === 'skip') {
      await routing?.release(planned, judged);
      attempts.push({ provider: planned.provider, model: planned.model, reason: 'circuit_open' });
      if (hasNext) metrics?.fallback(planned.provider, planned.model);
      continue;
    }
    /** Whether the breaker heard this attempt's verdict; a trial without one hands its claim back. */
    let verdict = gate !== 'trial';
    const t = await readyTarget(deps, planned, call);
    if (!t) {
      if (!verdict) await breaker?.endTrial(planned.provider);
      await routing?.release(planned, judged);
      attempts.push({ provider: planned.provider, model: planned.model, reason: 'no_stored_key' });
      continue;
    }
    let outcome: RouteOutcome = { ok: false, reason: 'cancelled' };
    const ac = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    let began = performance.now();
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        ac.abort();
      }, timeoutMs);
    };
    const ctx: AttemptContext = {
      signal: ac.signal,
      start: () => {
        began = performance.now();
        arm();
      },
      touch: () => {
        if (opts.idleTimeout && timer) arm();
      },
      commit: () => {
        sent = true;
      },
      attempts,
    };
    const onClientAbort = () => ac.abort();
    call.signal.addEventListener('abort', onClientAbort, { once: true });
    if (call.signal.aborted) ac.abort();
    let finished = false;
    try {
      const value = yield* run(t, ctx);
      finished = true;
      outcome = { ok: true };
      deps.record(t.provider, true, performance.now() - began);
      if (many && judged) {
        await breaker?.success(t.provider);
        verdict = true;
      }
      return { value, target: t, attempts };
    } catch (err) {
      finished = true;
      const own = ownError(err);
      const error =
        own ??
        (await mapUpstreamError(err, {
          provider: t.provider,
          timedOut,
          timeoutMs,
          cancelled: call.signal.aborted,
          responsesApiSetting: deps.providers.responsesApiSetting(t.provider),
        }));
      const reason = String(error.details?.reason ?? error.appCode);
      outcome = {
        ok: false,
        reason,
        retryAfterSeconds: typeof error.details?.retryAfterSeconds === 'number' ? error.details.retryAfterSeconds : undefined,
      };
      if (!own) {
        deps.record(t.provider, false, performance.now() - began, reason);
        const url = await failedUpstreamUrl(err);
        logger.warn('ai: upstream call failed', {
          requestId: t.requestId,
          provider: t.provider,
          model: t.model,
          reason,
          status: error.details?.status,
          ...(url ? { url } : {}),
          message: error.message,
        });
      }
      // The provider refusing the server's key (revoked, rotated, mistyped) is that deployment's
      // failure, not the request's: the next target has a key of its own. A caller's own key that
      // is refused is the caller's to fix, and is answered as it is.
      const serverKeyRefused = judged && reason === 'invalid_key';
      if (!(isRetryable(error) || serverKeyRefused) || call.signal.aborted) throw error;
      // Counted on every server-keyed call, not only on calls with fallbacks: only skipping needs them.
      if (judged) {
        await breaker?.failure(t.provider, reason);
        verdict = true;
      }
      if (sent) throw error;
      attempts.push({ provider: t.provider, model: t.model, reason });
      last = error;
      if (reason === 'rate_limited' && outcome.retryAfterSeconds !== undefined)
        soonestRetry = Math.min(soonestRetry ?? Infinity, outcome.retryAfterSeconds);
      if (hasNext) {
        metrics?.fallback(t.provider, t.model);
        // Another deployment of the same route is tried at once: the one that failed is cooling down.
        if (!(t.route && targets[i + 1]!.route))
          await sleep(backoff(deps, attempts.length), undefined, { signal: call.signal }).catch(() => undefined);
        if (call.signal.aborted) throw error;
      }
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onClientAbort);
      // The consumer stopped reading mid-attempt (return()): stop the upstream.
      if (!finished) ac.abort();
      if (!verdict) await breaker?.endTrial(t.provider);
      await routing?.finished(t, outcome, performance.now() - began, judged);
    }
  }
  if (last) {
    if (attempts.length === 1) throw last;
    // Every target failed, the last with a 429: the caller may come back when the first of those
    // that answered 429 does (another target's shorter Retry-After), not only when the last does.
    const retry = last.details?.reason === 'rate_limited' && soonestRetry !== undefined ? soonestRetry : undefined;
    throw new CoreError(last.appCode, last.message, {
      details: { ...last.details, attempts, ...(retry !== undefined ? { retryAfterSeconds: retry } : {}) },
      ...(retry !== undefined
        ? { headers: { ...last.headers, 'Retry-After': String(retry) } }
        : last.headers
          ? { headers: last.headers }
          : {}),
    });
  }
  const exhausted = routeExhausted(attempts, deps.routing?.now() ?? Date.now());
  if (exhausted) throw exhausted;
  const reason = attempts.at(-1)?.reason ?? 'circuit_open';
  throw new CoreError('UNAVAILABLE', 'every target of this call is unavailable (circuit open)', { details: { reason, attempts } });
}

/** Run a loop whose attempts yield nothing (generate, embed) to its result. */
export async function settleLoop<T, R>(loop: AsyncGenerator<never, Served<T, R>, undefined>): Promise<Served<T, R>> {
  const step = await loop.next();
  if (!step.done) throw new CoreError('INTERNAL', 'an attempt of a non-streamed call yielded output');
  return step.value;
}

const SDK: AttemptPath = { kind: 'sdk' };

/**
 * Where an attempt's output goes: to the caller only, or, for a stream whose answer the response
 * cache stores, also into a cache entry (built from the events only the SDK path reads).
 */
export type AttemptOutput = 'caller' | 'caller-and-stream-cache';

/**
 * How one attempt reaches its target (docs/ai.md#pass-through). The pass-through path is taken
 * when `ai.passThrough` is on, the call came in a vendor's wire format (call.wire, /v1 only) and
 * the target speaks that format (ProviderRegistry.passThroughEndpoint), unless the call needs
 * what only the SDK path does: structured output (the server validates the answer against the
 * schema), a server prompt (`@name`, resolved on the server and never sent as the caller wrote
 * it), or, on a stream, storing the answer in the response cache (an entry is built from the
 * events the SDK path reads). Everything around the attempt (payer, hold, targets, fallbacks,
 * breaker, routes, settlement, statistics) is the same on both paths.
 */
export function attemptPath(
  deps: CallDeps,
  t: PreparedCall,
  input: TextCallInput,
  call: TextCall,
  destination: AttemptOutput,
): AttemptPath {
  const wire = call.wire;
  if (!wire || !deps.config.ai.passThrough || input.output || destination === 'caller-and-stream-cache') return SDK;
  for (const r of t.prompt.resolved) if (r.name !== undefined) return SDK;
  const endpoint = deps.providers.passThroughEndpoint(t.provider, t.model, t.apiKey, wire.format);
  return endpoint ? { kind: 'pass-through', endpoint } : SDK;
}
