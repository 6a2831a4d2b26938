import type { Context, MiddlewareHandler } from 'hono';
import type { ResolvedConfig } from '@ai-backend/core';

/** Spec rule 3, plus DELETE which MCP needs to end a session. */
const ALLOW_METHODS = 'GET, POST, OPTIONS, HEAD, DELETE';
/** Spec rule 4, plus the MCP session and resumability headers, and x-api-key (the Anthropic wire format's credential). */
const ALLOW_HEADERS =
  'Content-Type, Authorization, X-Requested-With, mcp-protocol-version, Accept, Accept-Language, Content-Language, Origin, mcp-session-id, last-event-id, x-api-key';
/** Browsers can only read these response headers when exposed (typescript-sdk #764). */
const EXPOSE_HEADERS =
  'Mcp-Session-Id, WWW-Authenticate, Mcp-Protocol-Version, Retry-After, RateLimit, RateLimit-Policy, X-Should-Retry, X-Request-Id, Request-Id';
/** Spec rule 9: the OAuth discovery path answers preflights the same way for everyone. */
const DISCOVERY_PREFIX = '/.well-known/';

/** Where the middleware leaves the headers a response needs, for handlers that build their own. */
const PENDING = 'ai-backend:cors';

/**
 * Merge this request's CORS headers into a header record a handler is about to build a Response
 * with, and tell the middleware they are in. Adding them afterwards means materialising the
 * Node adapter's lightweight response (17% of /rpc throughput in the transport benchmark).
 */
export function withCorsHeaders(c: Context, headers: Record<string, string>): Record<string, string> {
  const pending = c.get(PENDING as never) as Record<string, string> | undefined;
  if (!pending) return headers;
  c.set(PENDING as never, undefined as never);
  return { ...headers, ...pending };
}

/**
 * CORS per the spec's nine rules. The config was validated at load time (credentials with '*'
 * is refused there, rule 7; origin functions are not accepted, rule 8).
 */
export function cors(config: ResolvedConfig['cors'], originOf: (req: Request) => string | undefined): MiddlewareHandler {
  const wildcard = config.origin.includes('*');
  const allowed = new Set(config.origin);

  return async (c, next) => {
    const isPreflight = c.req.method === 'OPTIONS';
    if (isPreflight && c.req.path.startsWith(DISCOVERY_PREFIX)) {
      return c.body(null, 200, {
        'Access-Control-Allow-Origin': '*',
        'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
        'Access-Control-Allow-Headers': ALLOW_HEADERS,
        'Access-Control-Max-Age': '86400',
      });
    }
    const origin = originOf(c.req.raw);
    const headers: Record<string, string> = {};
    if (wildcard) headers['Access-Control-Allow-Origin'] = '*';
    else if (origin && allowed.has(origin)) {
      headers['Access-Control-Allow-Origin'] = origin;
      headers.Vary = 'Origin';
    }
    if (config.credentials && headers['Access-Control-Allow-Origin']) headers['Access-Control-Allow-Credentials'] = 'true';

    if (isPreflight) {
      return c.body(null, 200, {
        ...headers,
        'Access-Control-Allow-Methods': ALLOW_METHODS,
        'Access-Control-Allow-Headers': ALLOW_HEADERS,
        'Access-Control-Max-Age': '600',
      });
    }
    if (headers['Access-Control-Allow-Origin']) headers['Access-Control-Expose-Headers'] = EXPOSE_HEADERS;
    const pending = Object.keys(headers).length > 0;
    if (pending) c.set(PENDING as never, headers as never);
    await next();
    // Still pending: the handler built its response without them (tRPC, MCP, health).
    if (pending && c.get(PENDING as never)) for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  };
}
