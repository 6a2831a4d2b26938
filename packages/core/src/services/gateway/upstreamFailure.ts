import { CoreError } from '../../kernel/CoreError.js';
import { invalidAnswer } from './checkedAnswer.js';

/** Where a failed request ran, for the error that reports it. */
export interface FailureContext {
  /** The server's configured name. */
  server: string;
  /** The request, as errors name it (`tools/call echo`, `resources/read`). */
  what: string;
  timeoutMs: number;
  /** Cuts the connection's credentials out of an upstream's text (UpstreamConnection.scrub). */
  scrub: (text: string) => string;
}

/**
 * What a request that failed on an open connection is reported as: a CoreError naming the server
 * (never the upstream's text when it is garbage), and, when the error means the HTTP connection
 * itself is gone (connectionGone), why, so the connection is dropped and opened again.
 */
export function upstreamFailure(err: unknown, c: FailureContext): { error: Error; gone: string | null } {
  const { server, what } = c;
  // Cut while it was read (boundedFetch): a read that failed, or the JSON-RPC error that stands for a cut SSE answer.
  const cut = (err as { data?: { reason?: unknown } } | null)?.data?.reason === 'upstream_result_too_large';
  if (cut || (err instanceof CoreError && err.details?.reason === 'upstream_result_too_large' && !err.details.server)) {
    const error = new CoreError('PAYLOAD_TOO_LARGE', `MCP server "${server}" answered ${what} with ${(err as Error).message}`, {
      details: { reason: 'upstream_result_too_large', server },
    });
    return { error, gone: null };
  }
  if (err instanceof CoreError) return { error: err, gone: null };
  const invalid = invalidAnswer(err);
  if (invalid !== undefined) {
    const error = new CoreError('UPSTREAM_ERROR', `MCP server "${server}" answered ${what} with no valid result: ${c.scrub(invalid)}`, {
      details: { reason: 'upstream_invalid_result', server },
    });
    return { error, gone: null };
  }
  return { error: failureOf(err, c), gone: connectionGone(err) };
}

function failureOf(err: unknown, { server, what, timeoutMs, scrub }: FailureContext): CoreError {
  if ((err as { name?: string } | null)?.name === 'AbortError') return new CoreError('CANCELLED', 'request cancelled');
  // The credentials were refused (a per-user token revoked at its server): the gateway asks for fresh ones.
  if (httpStatusOf(err) === 401)
    return new CoreError('UPSTREAM_ERROR', `MCP server "${server}" refused the credentials on ${what}`, {
      details: { reason: 'upstream_unauthorized', server },
    });
  if (isTimeout(err))
    return new CoreError('UPSTREAM_TIMEOUT', `MCP server "${server}" did not answer ${what} within ${timeoutMs} ms`, {
      details: { reason: 'upstream_timeout', server },
    });
  // A protocol error the upstream sent (its message is its own, about its own tool): passed on, bounded.
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? scrub(err.message.slice(0, 500)) : 'failed';
  if (typeof code === 'number')
    return new CoreError('UPSTREAM_ERROR', `MCP server "${server}" refused ${what}: ${message}`, {
      details: { reason: 'upstream_error', server, upstreamCode: code },
    });
  return new CoreError('UPSTREAM_ERROR', `MCP server "${server}" failed on ${what}: ${message}`, {
    details: { reason: 'upstream_error', server },
  });
}

/** An SDK error code for a timed-out request (SdkErrorCode.RequestTimeout). */
export const isTimeout = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === 'REQUEST_TIMEOUT' || /timed? ?out/i.test((err as Error | null)?.message ?? '');

/**
 * Why an error means the HTTP connection itself is gone, or null: the server is unreachable, or it
 * no longer knows our session (404 per the spec; some servers, server-everything among them,
 * answer 400 "No valid session ID provided" after a restart). The SDK client does not reconnect
 * by itself, and no close event comes: without this, every later call would repeat the error.
 */
function connectionGone(err: unknown): string | null {
  const status = httpStatusOf(err);
  const message = err instanceof Error ? `${err.message} ${String((err.cause as Error | undefined)?.message ?? '')}` : '';
  if (status === 404 || (status === 400 && /session/i.test(message)) || /no valid session/i.test(message))
    return 'the upstream lost the session';
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed/i.test(message)) return 'the upstream is unreachable';
  return null;
}

/** The HTTP status of an SDK transport error (SdkHttpError carries it as `status`). */
function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

export function describe(err: unknown, timeoutMs: number): string {
  if (isTimeout(err)) return `no answer within ${timeoutMs} ms`;
  if (err instanceof CoreError) return err.message;
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s+/g, ' ').slice(0, 300);
}
