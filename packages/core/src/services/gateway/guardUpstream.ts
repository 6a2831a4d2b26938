import { fetchOver, guardedUrlProblem, pinnedRequest, publicLookupVia, systemResolve, type ResolveAll } from '../../net/guardedFetch.js';
import type { HttpRequester } from '../../net/httpRequest.js';
import type { ResolvedConfig } from '../../config/schema.js';

type GatewayLimits = Pick<ResolvedConfig['gateway'], 'allowHttp' | 'allowPrivateNetwork'>;

/** Why a remote upstream URL may not be used (scheme, credentials, a non-public address literal), or null. */
export function upstreamUrlProblem(url: string, limits: GatewayLimits): string | null {
  return guardedUrlProblem(new URL(url), {
    allowHttp: limits.allowHttp || limits.allowPrivateNetwork,
    allowPrivateNetwork: limits.allowPrivateNetwork,
  });
}

/** How remote upstreams are reached: the SDK client's fetch, and the same guard below fetch for the forwarded tools/call. */
export interface UpstreamHttp {
  fetch: typeof fetch;
  request: HttpRequester;
}

/**
 * The fetch (and request) remote upstreams are reached with: each request's URL is checked by the
 * SSRF rules of core/net (https only unless `gateway.allowHttp`, no credentials, no non-public
 * address literal) and each connection by the address it connects to (pinnedFetch: the one
 * resolution is the checked one, so DNS rebinding reaches nothing), unless
 * `gateway.allowPrivateNetwork`. Both share one pool of checked connections: a name is resolved
 * and checked when a connection is opened, and a kept-alive connection serves later calls without
 * resolving again. Undefined (plain fetch) when private networks are allowed. `resolve`: tests
 * inject a resolver.
 */
export function guardedUpstream(limits: GatewayLimits, resolve?: ResolveAll): UpstreamHttp | undefined {
  if (limits.allowPrivateNetwork) return undefined;
  const request = pinnedRequest({ allowHttp: limits.allowHttp, lookup: publicLookupVia(resolve ?? systemResolve) });
  return { request, fetch: fetchOver(request) };
}
