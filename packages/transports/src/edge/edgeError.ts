import { JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD } from '@ai-backend/core/internal';

/** The answer shapes of the route families the HTTP edge guards. */
export type EdgeFamily = 'jsonrpc' | 'trpc' | 'oauth' | 'openai' | 'anthropic' | 'plain';

type EdgeStatus = 400 | 403 | 408 | 413 | 415 | 429 | 503;

const TRPC_CODE: Record<EdgeStatus, keyof typeof JSONRPC_CODE_BY_TRPC> = {
  400: 'BAD_REQUEST',
  403: 'FORBIDDEN',
  408: 'TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/** Anthropic's error types (its API's own names) for what the edge answers. */
const ANTHROPIC_TYPE: Record<EdgeStatus, string> = {
  400: 'invalid_request_error',
  403: 'permission_error',
  408: 'timeout_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  503: 'overloaded_error',
};

/**
 * An answer from the HTTP edge (origin, content type, body limits), before any handler ran,
 * in the shape the route's clients parse: a JSON-RPC error on /rpc and /mcp, a tRPC error
 * (superjson envelope) on /trpc, an OpenAI error on /v1 (Anthropic's on /v1/messages), an RFC 6749 error on the OAuth
 * routes. Messages are ours only.
 */
export function edgeError(family: EdgeFamily, status: EdgeStatus, message: string, headers: Record<string, string> = {}): Response {
  let body: unknown;
  if (family === 'jsonrpc') {
    const code =
      status === 400
        ? JSONRPC_STANDARD.PARSE_ERROR
        : status === 403 || status === 429 || status === 503
          ? JSONRPC_CODE_BY_TRPC[TRPC_CODE[status]]
          : JSONRPC_STANDARD.INVALID_REQUEST;
    body = { jsonrpc: '2.0', id: null, error: { code, message } };
  } else if (family === 'trpc') {
    const code = TRPC_CODE[status];
    body = { error: { json: { message, code: JSONRPC_CODE_BY_TRPC[code], data: { code, httpStatus: status } } } };
  } else if (family === 'openai') {
    const type =
      status === 403
        ? 'permission_error'
        : status === 429
          ? 'rate_limit_error'
          : status === 503
            ? 'overloaded_error'
            : 'invalid_request_error';
    body = { error: { message, type, param: null, code: TRPC_CODE[status].toLowerCase() } };
  } else if (family === 'anthropic') {
    body = { type: 'error', error: { type: ANTHROPIC_TYPE[status], message } };
  } else if (family === 'oauth') {
    body = { error: status === 403 ? 'access_denied' : 'invalid_request', error_description: message };
  } else {
    body = { error: message };
  }
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}
