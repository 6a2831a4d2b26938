import type { Context as HonoContext } from 'hono';
import { CoreError, createContext, type Context, type McpCallContext, type Runtime, type TransportName } from '@ai-backend/core';
import { bearerToken, clientIp, tokenInQuery } from './requestFacts.js';

/** Build the tRPC context for one HTTP request: the one place transports turn a request into core's context. */
export async function contextFor(c: HonoContext, runtime: Runtime, transport: TransportName, mcp?: McpCallContext): Promise<Context> {
  const ctx = await createContext({
    runtime,
    bearer: bearerToken(c.req.raw),
    mcp,
    req: {
      transport,
      ip: clientIp(c, runtime.config.trustProxy),
      // Lazy: creating a request's AbortSignal is costly on Node 20 and most procedures never look.
      get signal() {
        return c.req.raw.signal;
      },
      headers: c.req.raw.headers,
    },
  });
  // A token in the query string (RFC 6750 §2.3) is refused like any bad credential, on every
  // procedure of the request; /mcp does the same at HTTP level. The substring test keeps URL
  // parsing off the common path.
  if (c.req.url.includes('token=') && tokenInQuery(new URL(c.req.url))) {
    ctx.credentialError = new CoreError('INVALID_TOKEN', 'tokens in the query string are not accepted');
  }
  return ctx;
}
