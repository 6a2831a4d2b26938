import { loadAiSdk } from './aiSdk.js';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';

/** Why an upstream call failed; sent to clients as `details.reason`. */
export type UpstreamFailureReason =
  | 'invalid_key'
  | 'rate_limited'
  | 'upstream_5xx'
  | 'upstream_rejected'
  | 'malformed_response'
  | 'connection_lost'
  | 'unreachable'
  | 'timeout'
  | 'cancelled'
  | 'upstream_failed';

export interface UpstreamErrorContext {
  provider: ProviderId;
  /** Our own timeout fired. */
  timedOut: boolean;
  timeoutMs: number;
  /** The client went away (ctx.req.signal). */
  cancelled: boolean;
  /** The setting that would move this provider off the Responses API (ProviderRegistry.responsesApiSetting), when it is on it. */
  responsesApiSetting?: string | undefined;
}

/**
 * The URL a failed upstream call went to, for logs and hints: origin and path only. Credentials in
 * the URL and the query (Google's `?key=`) are dropped; undefined when the error has no URL.
 */
export async function failedUpstreamUrl(err: unknown): Promise<string | undefined> {
  const { APICallError, RetryError } = (await loadAiSdk()).ai;
  const e = RetryError.isInstance(err) ? err.lastError : err;
  if (!APICallError.isInstance(e) || !e.url) return undefined;
  try {
    const u = new URL(e.url);
    return u.origin + u.pathname;
  } catch {
    return undefined;
  }
}

/**
 * The longest Retry-After believed from an upstream: an hour. A route deployment cools for what
 * its 429 says, on every instance, and the caller is told to wait as long: a `Retry-After: 1e9` (or
 * a date years ahead) from a broken proxy would otherwise take the deployment out for decades.
 */
export const MAX_RETRY_AFTER_SEC = 3600;

/** Retry-After in whole seconds from the upstream headers (seconds, HTTP date, or retry-after-ms), at most MAX_RETRY_AFTER_SEC. */
function retryAfterSeconds(headers: Record<string, string> | undefined): number | undefined {
  const secs = retryAfterHeader(headers);
  return secs === undefined ? undefined : Math.min(secs, MAX_RETRY_AFTER_SEC);
}

function retryAfterHeader(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms / 1000);
  const raw = headers['retry-after'];
  if (raw === undefined) return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs) && secs >= 0) return Math.ceil(secs);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Node/undici socket error codes: the connection itself failed, whatever the status line said. */
const NETWORK_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

function hasNetworkCause(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  }
  return false;
}

type MakeError = (
  code: ConstructorParameters<typeof CoreError>[0],
  reason: UpstreamFailureReason,
  message: string,
  extra?: { status?: number; headers?: Record<string, string>; retryAfter?: number; facts?: RefusalFacts },
) => CoreError;

/**
 * What a provider's refusal body says in machine-readable words: its error `type` (Google's
 * `status`), `code` and `param`, each kept only when it has the shape of an identifier the
 * providers use (`invalid_request_error`, `context_length_exceeded`, `INVALID_ARGUMENT`,
 * `messages[0].content`). The free-text message is never kept: it may quote the key or the prompt.
 * One case per identifier, so a mixed-case token (a key, a quoted word) is not taken for one.
 */
export interface RefusalFacts {
  upstreamType?: string;
  upstreamCode?: string;
  param?: string;
}

const IDENTIFIER = /^(?:[a-z][a-z0-9_]{0,63}|[A-Z][A-Z0-9_]{0,63})$/;
const PARAM = /^[a-z_][a-z0-9_]{0,63}(?:(?:\.[a-z_][a-z0-9_]{0,63})|\[\d{1,6}\]){0,8}$/;
/**
 * How much of a refusal's body is read (the pass-through path, the key check) and parsed: an error
 * object a provider wrote is far shorter; a longer body is not read further, nor parsed.
 */
export const REFUSAL_BODY_BYTES = 64 * 1024;

export function refusalFacts(body: unknown): RefusalFacts {
  if (typeof body !== 'string' || body.length > REFUSAL_BODY_BYTES) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  const outer = parsed as { error?: unknown } | null;
  // OpenAI, Anthropic, Google and OpenRouter all nest it under `error`; some compatible servers do not.
  const err = (outer && typeof outer.error === 'object' && outer.error !== null ? outer.error : outer) as Record<string, unknown> | null;
  if (!err || typeof err !== 'object') return {};
  const facts: RefusalFacts = {};
  const type = typeof err.type === 'string' ? err.type : err.status;
  if (typeof type === 'string' && IDENTIFIER.test(type)) facts.upstreamType = type;
  if (typeof err.code === 'string' && IDENTIFIER.test(err.code)) facts.upstreamCode = err.code;
  if (typeof err.param === 'string' && PARAM.test(err.param)) facts.param = err.param;
  return facts;
}

/**
 * Whether a refusal body says the key is what was refused. Google answers a key it does not know
 * (or one expired) with HTTP 400 `INVALID_ARGUMENT`, naming it only in `error.details[].reason`;
 * read as a refusal of the request, a server key Google stopped taking would be the caller's 400.
 */
export function refusesKey(body: unknown): boolean {
  if (typeof body !== 'string' || body.length > REFUSAL_BODY_BYTES || !body.includes('API_KEY_')) return false;
  try {
    const details = (JSON.parse(body) as { error?: { details?: unknown } } | null)?.error?.details;
    return Array.isArray(details) && details.some((d) => KEY_REFUSALS.has((d as { reason?: unknown } | null)?.reason as string));
  } catch {
    return false;
  }
}

const KEY_REFUSALS = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED']);

/**
 * Whether a 404 says the model does not exist there: OpenAI's `code: model_not_found` only.
 * Anthropic (`not_found_error`), Google (`NOT_FOUND`) and llama.cpp answer a path they do not
 * serve (the operator's base URL) with the same words as a model they do not have, so their 404
 * stays ours: a wrong base URL must not read as the caller's unknown model.
 */
const modelNotFound = (f: RefusalFacts) => f.upstreamCode === 'model_not_found';

/**
 * OpenAI's codes for a refusal about the account that pays, not the request: with the server's key
 * that is the operator's outage, which must not read as every caller's bad request (and must show
 * in the operator's 5xx). Anthropic says so with HTTP 402 `billing_error`, already ours.
 */
const ACCOUNT_REFUSALS = new Set(['billing_hard_limit_reached', 'billing_not_active', 'account_deactivated', 'insufficient_quota']);

/**
 * A provider's refusal of the request itself (a 4xx other than the key's and the rate limit's) is
 * the caller's error, answered with the status a provider would answer (docs/ai.md#errors): 400
 * for a 400 or 422 (a context too long, a field out of range), 413 for a 413, 404 for a model the
 * provider says does not exist. Any other refusal (a 404 for a path, the server's own config; a
 * 402 or a billing code of the platform's account; 405, 408, 409, 410, 415) stays our 502: the
 * caller's request is not what it is about. The reason is `upstream_rejected` either way: no
 * fallback is tried, and the upstream metrics and the log line show it whatever the caller was answered.
 */
function refusal(make: MakeError, provider: ProviderId, status: number, facts: RefusalFacts): CoreError {
  const named = facts.upstreamCode ?? facts.upstreamType;
  const message = `${provider} rejected the request (HTTP ${status}${named ? `: ${named}` : ''})`;
  const code =
    facts.upstreamCode !== undefined && ACCOUNT_REFUSALS.has(facts.upstreamCode)
      ? 'UPSTREAM_ERROR'
      : status === 400 || status === 422
        ? 'BAD_REQUEST'
        : status === 413
          ? 'PAYLOAD_TOO_LARGE'
          : status === 404 && modelNotFound(facts)
            ? 'NOT_FOUND'
            : 'UPSTREAM_ERROR';
  return make(code, 'upstream_rejected', message, { status, facts });
}

/**
 * Turn whatever the AI SDK threw into a CoreError a client can act on. Classified by error
 * class, HTTP status and the SDK's retryable flag, never by message text. Nothing of the
 * upstream's answer (which may quote the key or the prompt) and no cause is passed on.
 */
export async function mapUpstreamError(err: unknown, ctx: UpstreamErrorContext): Promise<CoreError> {
  const {
    APICallError,
    EmptyResponseBodyError,
    InvalidResponseDataError,
    JSONParseError,
    NoContentGeneratedError,
    RetryError,
    TypeValidationError,
  } = (await loadAiSdk()).ai;
  const make: MakeError = (code, reason, message, extra = {}) => {
    const details: Record<string, unknown> = { reason, provider: ctx.provider, ...extra.facts };
    if (extra.status !== undefined) details.status = extra.status;
    if (extra.retryAfter !== undefined) details.retryAfterSeconds = extra.retryAfter;
    return new CoreError(code, message, { details, ...(extra.headers ? { headers: extra.headers } : {}) });
  };

  // Our own signals first: the SDK reports both as a plain abort.
  if (ctx.cancelled) return make('CANCELLED', 'cancelled', 'the request was cancelled by the client');
  if (ctx.timedOut) return make('UPSTREAM_TIMEOUT', 'timeout', `${ctx.provider} did not answer within ${ctx.timeoutMs} ms`);

  const e = RetryError.isInstance(err) ? err.lastError : err;
  if (APICallError.isInstance(e)) {
    const status = e.statusCode;
    if (status === undefined) return make('UPSTREAM_ERROR', 'unreachable', `${ctx.provider} could not be reached`);
    if (status === 401 || status === 403 || (status === 400 && refusesKey(e.responseBody)))
      return make('UPSTREAM_ERROR', 'invalid_key', `${ctx.provider} rejected the API key`, { status });
    if (status === 429) {
      const retryAfter = retryAfterSeconds(e.responseHeaders);
      return make(
        'RATE_LIMITED',
        'rate_limited',
        `${ctx.provider} is rate limiting requests${retryAfter !== undefined ? `; retry after ${retryAfter} s` : ''}`,
        {
          status,
          retryAfter,
          ...(retryAfter !== undefined ? { headers: { 'Retry-After': String(retryAfter) } } : {}),
        },
      );
    }
    if (status >= 500) return make('UPSTREAM_ERROR', 'upstream_5xx', `${ctx.provider} failed (HTTP ${status})`, { status });
    if (status >= 400) {
      // The log line has the whole URL; a caller gets the path only in the hint below (the host,
      // and on other wires a project or deployment in the path, are the operator's business).
      let path: string | undefined;
      try {
        path = e.url ? new URL(e.url).pathname : undefined;
      } catch {
        path = undefined;
      }
      // The default OpenAI wire is the Responses API; most OpenAI-compatible servers (llama.cpp,
      // vLLM, Ollama, LM Studio) serve only Chat Completions and answer 404 there (OpenAI itself
      // answers 404 there for a model it does not have, and says so in its `code`). Only that code
      // counts here: llama.cpp answers an unknown path with `type: 'not_found_error'`.
      const facts = refusalFacts(e.responseBody);
      if (status === 404 && ctx.responsesApiSetting && path?.endsWith('/responses') && !modelNotFound(facts)) {
        return make(
          'UPSTREAM_ERROR',
          'upstream_rejected',
          `${ctx.provider} answered HTTP 404 for POST ${path}: the server does not serve the OpenAI Responses API (the default wire); for a Chat Completions server set ${ctx.responsesApiSetting}: 'chat'`,
          { status },
        );
      }
      return refusal(make, ctx.provider, status, facts);
    }
    // A 2xx the SDK could not use: either the socket died mid-body (a network error code in
    // the cause chain; newer SDKs also mark it retryable) or the body did not parse or validate.
    if (e.isRetryable || hasNetworkCause(e))
      return make('UPSTREAM_ERROR', 'connection_lost', `the connection to ${ctx.provider} was lost mid-reply`, { status });
    return make('UPSTREAM_ERROR', 'malformed_response', `${ctx.provider} sent a reply that could not be read`, { status });
  }
  const unreadable = [InvalidResponseDataError, TypeValidationError, JSONParseError, NoContentGeneratedError, EmptyResponseBodyError];
  if (unreadable.some((cls) => cls.isInstance(e))) {
    return make('UPSTREAM_ERROR', 'malformed_response', `${ctx.provider} sent a reply that could not be read`);
  }
  return make('UPSTREAM_ERROR', 'upstream_failed', `the call to ${ctx.provider} failed`);
}
