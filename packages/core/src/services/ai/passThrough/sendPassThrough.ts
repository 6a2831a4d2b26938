import { readTextPrefix } from '../../../net/readTextPrefix.js';
import { loadAiSdk } from '../aiSdk.js';
import { REFUSAL_BODY_BYTES } from '../mapUpstreamError.js';
import type { PassThroughEndpoint, WireRequest } from './wireRequest.js';

/** What goes upstream: the caller's body with the target's model, and whether a usage event was asked for on the caller's behalf. */
export interface ForwardedRequest {
  body: string;
  /** An OpenAI Chat stream without `stream_options.include_usage`: it is asked for, and its usage chunk kept from the caller. */
  addedUsage: boolean;
  /** The endpoint's headers with the caller's allow-listed ones (WireRequest.headers) added; ours win. */
  headers: Record<string, string>;
}

const OUTPUT_LIMITS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

/**
 * The forwarded body (docs/ai.md#pass-through): the caller's JSON with `model` rewritten to the
 * target's id, our own fields removed (`models`, our fallbacks on Chat Completions), the output
 * limit the hold was made for written where the caller set none and over any larger one (so no
 * answer outgrows its reservation), and on an OpenAI Chat stream `stream_options.include_usage` (the only way its
 * usage is reported); a Responses request loses `background`. Everything else the caller sent goes as it is.
 */
export function forwardedRequest(req: WireRequest, e: PassThroughEndpoint, maxTokens: number): ForwardedRequest {
  const body: Record<string, unknown> = { ...req.body, model: e.model };
  let addedUsage = false;
  if (req.format === 'openai-chat') {
    delete body.models;
    if (body.max_tokens == null && body.max_completion_tokens == null) body[e.maxTokensField] = maxTokens;
    const so = body.stream_options as Record<string, unknown> | null | undefined;
    if (req.stream && so?.include_usage !== true) {
      body.stream_options = { ...(so ?? {}), include_usage: true };
      addedUsage = true;
    }
  } else {
    if (body[e.maxTokensField] == null) body[e.maxTokensField] = maxTokens;
    // A background response is answered at once without its output or usage (fetched later by id,
    // which this server does not serve): run in the foreground, as the SDK path does.
    if (req.format === 'openai-responses') delete body.background;
  }
  // Every output limit the body carries is at most the hold's: a server that honours another field
  // than the one the hold was read from (`max_tokens` beside `max_completion_tokens`) stays inside it.
  for (const field of OUTPUT_LIMITS) {
    const v = body[field];
    if (v != null && !(Number.isInteger(v) && (v as number) <= maxTokens)) body[field] = maxTokens;
  }
  const headers = req.headers ? { ...req.headers, ...e.headers } : e.headers;
  return { body: JSON.stringify(body), addedUsage, headers };
}

/**
 * POST the forwarded body with the provider's fetch. A failure is thrown as the AI SDK's own
 * `APICallError` (status, headers, retryable) or the fetch error, so mapUpstreamError and the
 * attempt loop classify it exactly as an SDK call's: 429 / 5xx / connection errors move on to the
 * next target, 401 / 403 are `invalid_key`, and nothing of the upstream's error body reaches the
 * caller (it may quote the key or the prompt).
 */
export async function sendPassThrough(e: PassThroughEndpoint, f: ForwardedRequest, signal: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    res = await e.fetch(e.url, { method: 'POST', headers: f.headers, body: f.body, signal });
  } catch (err) {
    if (signal.aborted || !(err instanceof TypeError)) throw err;
    // As the SDK reports a connection that failed before any answer: retryable, no status.
    const { ai } = await loadAiSdk();
    throw new ai.APICallError({ message: 'Cannot connect to API', url: e.url, requestBodyValues: {}, cause: err, isRetryable: true });
  }
  if (res.ok) return res;
  // Read (its first 64 kB) so mapUpstreamError can take the refusal's identifiers from it, as from
  // an SDK call's; its text is never passed on. The AI SDK (for its error class) is awaited on
  // failures only: an answered call does not wait a turn for it.
  const responseBody = await readTextPrefix(res, REFUSAL_BODY_BYTES);
  const { ai } = await loadAiSdk();
  throw new ai.APICallError({
    message: `HTTP ${res.status}`,
    url: e.url,
    requestBodyValues: {},
    statusCode: res.status,
    responseBody,
    responseHeaders: Object.fromEntries(res.headers),
    isRetryable: res.status === 408 || res.status === 409 || res.status === 429 || res.status >= 500,
  });
}

/** How a 2xx answer failed: its body broke off (`connection_lost`, retryable) or it could not be parsed (`malformed_response`). */
export type AnswerFault = 'lost' | 'malformed';

/** A 2xx whose body broke off or could not be read, as the SDK reports it for an SDK call. */
export async function unreadableAnswer(e: PassThroughEndpoint, status: number, cause: unknown, fault: AnswerFault): Promise<Error> {
  const { ai } = await loadAiSdk();
  const lost = fault === 'lost';
  return new ai.APICallError({
    message: lost ? 'the connection was lost mid-reply' : 'the reply could not be read',
    url: e.url,
    requestBodyValues: {},
    statusCode: status,
    cause,
    isRetryable: lost,
  });
}
