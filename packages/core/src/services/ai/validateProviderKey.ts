import { readTextPrefix } from '../../net/readTextPrefix.js';
import { REFUSAL_BODY_BYTES, refusesKey } from './mapUpstreamError.js';
import type { ProviderId } from '../../config/sections/ai.js';

/** Outcome of a key check. `reason` is set when `valid` is false. */
export interface KeyValidation {
  provider: ProviderId;
  valid: boolean;
  reason?: 'invalid_key' | 'unreachable' | 'timeout' | 'rate_limited' | 'unexpected_status';
  /** Upstream HTTP status, when one was received. */
  status?: number;
  message: string;
  latencyMs: number;
}

/**
 * Which check request a provider takes: the built-ins', `bearer` for named providers of OpenAI's
 * wire format (`GET /models`), `azure` (`api-key` header). Bedrock and Vertex sign their requests
 * (SigV4, Google OAuth), so they have no plain check and are not probed.
 */
export type KeyCheckKind = 'anthropic' | 'openai' | 'google' | 'openrouter' | 'bearer' | 'azure';

export interface ValidateKeyOptions {
  provider: ProviderId;
  /** Default: the provider id (a built-in). */
  kind?: KeyCheckKind;
  /** Undefined: a keyless server (no auth header). */
  apiKey: string | undefined;
  /** API base of the provider (as for the AI SDK, e.g. https://api.openai.com/v1). */
  baseUrl: string;
  timeoutMs: number;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
}

/**
 * The cheapest authenticated request per provider: it lists models (or, for OpenRouter whose
 * model list is public, reads the key's own record), so it costs no tokens. The AI SDK has no
 * call for this, hence plain fetch.
 */
function checkRequest(kind: KeyCheckKind, base: string, apiKey: string | undefined): { url: string; headers: Record<string, string> } {
  switch (kind) {
    case 'bearer':
      return { url: `${base}/models`, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} };
    case 'azure':
      return { url: `${base}/v1/models?api-version=v1`, headers: { 'api-key': apiKey ?? '' } };
    case 'openai':
      return { url: `${base}/models`, headers: { authorization: `Bearer ${apiKey}` } };
    case 'anthropic':
      return { url: `${base}/models?limit=1`, headers: { 'x-api-key': apiKey ?? '', 'anthropic-version': '2023-06-01' } };
    case 'google':
      return { url: `${base}/models?pageSize=1`, headers: { 'x-goog-api-key': apiKey ?? '' } };
    case 'openrouter':
      return { url: `${base}/key`, headers: { authorization: `Bearer ${apiKey}` } };
  }
}

/**
 * Check a key against the provider with a short timeout. Tells an invalid key (401/403) from
 * an unreachable or slow provider. Never throws for upstream trouble; the key is never part
 * of the result.
 */
export async function validateProviderKey(opts: ValidateKeyOptions): Promise<KeyValidation> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const { url, headers } = checkRequest(opts.kind ?? (opts.provider as KeyCheckKind), opts.baseUrl, opts.apiKey);
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, opts.timeoutMs);
  const onAbort = () => ac.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const result = (valid: boolean, message: string, extra: Partial<KeyValidation> = {}): KeyValidation => ({
    provider: opts.provider,
    valid,
    ...extra,
    message,
    latencyMs: elapsed(),
  });
  try {
    const res = await fetch(url, { headers, signal: ac.signal });
    // Only a 400 is read (Google's answer to a key it does not take: refusesKey), its first 64 kB.
    const body = res.status === 400 ? await readTextPrefix(res, REFUSAL_BODY_BYTES) : await res.body?.cancel().catch(() => undefined);
    if (res.ok) return result(true, `${opts.provider} accepted the key`, { status: res.status });
    if (res.status === 401 || res.status === 403 || refusesKey(body))
      return result(false, `${opts.provider} rejected the key`, { reason: 'invalid_key', status: res.status });
    if (res.status === 429)
      return result(false, `${opts.provider} is rate limiting; the key could not be checked`, {
        reason: 'rate_limited',
        status: res.status,
      });
    return result(false, `${opts.provider} answered HTTP ${res.status}; the key could not be checked`, {
      reason: 'unexpected_status',
      status: res.status,
    });
  } catch {
    if (timedOut) return result(false, `${opts.provider} did not answer within ${opts.timeoutMs} ms`, { reason: 'timeout' });
    return result(false, `${opts.provider} could not be reached`, { reason: 'unreachable' });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
