import type { Context as HonoContext } from 'hono';
import type { EntryGateway, RequestScope, TransportName } from '@ai-backend/core/internal';
import { bearerToken, clientIp, tokenInQuery } from './requestFacts.js';

/**
 * Open core's request scope for one HTTP request: the one place transports hand the request
 * facts to core (which verifies the credential once, whatever the number of calls).
 */
export function openScope(c: HonoContext, gateway: EntryGateway, transport: TransportName): Promise<RequestScope> {
  const url = c.req.url;
  return gateway.openScope({
    transport,
    method: c.req.method,
    url,
    headers: c.req.raw.headers,
    bearer: bearerToken(c.req.raw),
    // The substring test keeps URL parsing off the common path.
    tokenInQuery: url.includes('token=') && tokenInQuery(new URL(url)),
    ip: clientIp(c, gateway.config.trustProxy),
    signal: () => c.req.raw.signal,
  });
}
