import type { Context as HonoContext } from 'hono';
import { RequestScope, type Runtime, type TransportName } from '@ai-backend/core/internal';
import { bearerToken, clientIp, tokenInQuery } from './requestFacts.js';

/**
 * Open core's request scope for one HTTP request: the one place transports hand the request
 * facts to core (which verifies the credential once, whatever the number of calls).
 */
export function openScope(c: HonoContext, runtime: Runtime, transport: TransportName): Promise<RequestScope> {
  const url = c.req.url;
  return RequestScope.open(runtime, {
    transport,
    method: c.req.method,
    url,
    headers: c.req.raw.headers,
    bearer: bearerToken(c.req.raw),
    // The substring test keeps URL parsing off the common path.
    tokenInQuery: url.includes('token=') && tokenInQuery(new URL(url)),
    ip: clientIp(c, runtime.config.trustProxy),
    signal: () => c.req.raw.signal,
  });
}
