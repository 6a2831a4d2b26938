import { setTimeout as sleep } from 'node:timers/promises';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../errors/CoreError.js';
import type { CircuitBreaker } from './CircuitBreaker.js';
import type { CallDeps, PreparedCall, TextCallInput } from './prepareCall.js';
import { resolveModelRef } from './resolveModelRef.js';

/** One provider/model to try, with the key that pays for it. */
export type Target = PreparedCall;

/** A target that did not serve the call, and why (reported in `data.attempts`). */
export interface Attempt {
  provider: ProviderId;
  model: string;
  reason: string;
}

/** Failures worth trying the next target for; anything else is the request's own problem. */
const RETRYABLE = new Set(['rate_limited', 'upstream_5xx', 'timeout', 'unreachable', 'connection_lost']);

export function isRetryable(err: unknown): err is CoreError {
  return err instanceof CoreError && RETRYABLE.has(String(err.details?.reason));
}

/**
 * The targets of a call: the requested one, then `fallbacks` (the request's, else
 * `ai.fallbacks`). A fallback is kept only when it can serve this call exactly like the first:
 * allowed model, the same payer (platform calls need a server key for it; a caller's own key
 * only works with its own provider), attachments accepted, maxTokens within its limit.
 */
export function callTargets(deps: CallDeps, p: PreparedCall, input: TextCallInput): Target[] {
  const refs = input.fallbacks ?? deps.config.ai.fallbacks;
  if (refs.length === 0) return [p];
  const { providers } = deps;
  const out: Target[] = [p];
  for (const ref of refs) {
    const r = resolveModelRef(deps.config, ref);
    const model = r.model || providers.defaultModel(r.provider);
    if (out.some((t) => t.provider === r.provider && t.model === model)) continue;
    if (!providers.isModelAllowed(r.provider, model)) continue;
    const apiKey = p.mode === 'platform' ? providers.serverKey(r.provider) : r.provider === p.provider ? p.apiKey : undefined;
    if (!apiKey) continue;
    const info = providers.models.get(r.provider, model);
    if (p.prompt.attachments > 0 && !info?.input?.includes('image')) continue;
    if (info?.maxOutputTokens !== undefined && p.maxTokens > info.maxOutputTokens) continue;
    out.push({ ...p, provider: r.provider, model, apiKey });
  }
  return out;
}

/**
 * Try the targets in order until one answers. A retryable failure moves on to the next target
 * after a backoff (`ai.retry`); other failures end the call at once. With more than one target
 * the per-provider circuit breaker is consulted: an open provider is skipped. Only the target
 * that answered is charged (the caller settles with its provider and model).
 */
export async function withFallbacks<T>(
  deps: CallDeps,
  targets: Target[],
  breaker: CircuitBreaker | undefined,
  signal: AbortSignal,
  run: (t: Target) => Promise<T>,
): Promise<{ value: T; target: Target; attempts: Attempt[] }> {
  const attempts: Attempt[] = [];
  const many = targets.length > 1;
  let last: CoreError | undefined;
  for (const [i, t] of targets.entries()) {
    if (many && breaker && (await breaker.state(t.provider)) === 'open') {
      attempts.push({ provider: t.provider, model: t.model, reason: 'circuit_open' });
      continue;
    }
    try {
      const value = await run(t);
      if (many) await breaker?.success(t.provider);
      return { value, target: t, attempts };
    } catch (err) {
      if (!isRetryable(err) || signal.aborted) throw err;
      await breaker?.failure(t.provider, String(err.details?.reason));
      attempts.push({ provider: t.provider, model: t.model, reason: String(err.details?.reason) });
      last = err;
      if (i < targets.length - 1) {
        const { backoffMs, maxBackoffMs } = deps.config.ai.retry;
        const wait = Math.min(maxBackoffMs, backoffMs * 2 ** attempts.length);
        // Jitter keeps many clients that failed together from retrying together.
        await sleep(wait / 2 + Math.random() * (wait / 2), undefined, { signal }).catch(() => undefined);
        if (signal.aborted) throw err;
      }
    }
  }
  if (last) {
    if (attempts.length > 1) throw new CoreError(last.appCode, last.message, { details: { ...last.details, attempts }, ...(last.headers ? { headers: last.headers } : {}) });
    throw last;
  }
  throw new CoreError('UNAVAILABLE', 'every target of this call is unavailable (circuit open)', { details: { reason: 'circuit_open', attempts } });
}
