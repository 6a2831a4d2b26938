import type { MiddlewareHandler } from 'hono';
import { inRequestSpan, tracingActive } from '@ai-backend/core/internal';

/** Entry point of a path, a closed set (a metric label and the span name): unknown paths collapse to 'other'. */
export function entryOf(path: string): string {
  if (path.startsWith('/trpc/') || path.startsWith('/typedrpc/')) return 'trpc';
  if (path === '/rpc') return 'rpc';
  if (path === '/mcp') return 'mcp';
  // The /v1 wire formats, by the names their procedure calls carry: Anthropic's Messages API, else OpenAI's.
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path.startsWith('/v1/')) return 'openai';
  if (path.startsWith('/oauth/') || path === '/register' || path.startsWith('/.well-known/')) return 'oauth';
  if (path === '/openrpc.json' || path === '/openapi.json') return 'api_description';
  if (path === '/health' || path === '/health/ready') return 'health';
  if (path === '/metrics') return 'metrics';
  if (path.startsWith('/webhooks/')) return 'webhook';
  return 'other';
}

/**
 * Every HTTP request: a SERVER span (child of the caller's `traceparent`) and a count by entry
 * point and status class. `getReady` returns the runtime once it is built (requests that arrive
 * earlier wait for it in their handler and are still traced).
 */
export function observeRequests(
  getReady: () => { readonly metrics: { http(entry: string, status: number): void } | undefined } | undefined,
): MiddlewareHandler {
  return async (c, next) => {
    const entry = entryOf(c.req.path);
    // Without a tracer (the default) no span and no closure: one async layer less per request.
    if (!tracingActive()) await next();
    // The /v1 request span is `POST v1`: `POST openai` (or `anthropic`) is the name of a call to that provider.
    else
      await inRequestSpan(c.req.raw.headers, c.req.method, entry === 'openai' || entry === 'anthropic' ? 'v1' : entry, async () => {
        await next();
        return c.res.status;
      });
    getReady()?.metrics?.http(entry, c.res.status);
  };
}
