import type { Context as HonoContext } from 'hono';
import { createContext, type Context, type McpCallContext, type Runtime, type TransportName } from '@ai-backend/core';
import { bearerToken, clientIp } from './requestFacts.js';

/** Build the tRPC context for one HTTP request: the one place transports turn a request into core's context. */
export function contextFor(c: HonoContext, runtime: Runtime, transport: TransportName, mcp?: McpCallContext): Promise<Context> {
  return createContext({
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
}
