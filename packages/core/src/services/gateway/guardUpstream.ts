import { guardedUrlProblem, publicLookupVia, systemResolve, type ResolveAll } from '../../net/guardedFetch.js';
import { pinnedFetch } from '../../net/pinnedFetch.js';
import type { ResolvedConfig } from '../../config/schema.js';

type GatewayLimits = Pick<ResolvedConfig['gateway'], 'allowHttp' | 'allowPrivateNetwork'>;

/** Why a remote upstream URL may not be used (scheme, credentials, a non-public address literal), or null. */
export function upstreamUrlProblem(url: string, limits: GatewayLimits): string | null {
  return guardedUrlProblem(new URL(url), {
    allowHttp: limits.allowHttp || limits.allowPrivateNetwork,
    allowPrivateNetwork: limits.allowPrivateNetwork,
  });
}

/**
 * The fetch remote upstreams are reached with: each request's URL is checked by the SSRF rules
 * of core/net (https only unless `gateway.allowHttp`, no credentials, no non-public address
 * literal) and each connection by the address it connects to (pinnedFetch: the one resolution is
 * the checked one, so DNS rebinding reaches nothing), unless `gateway.allowPrivateNetwork`.
 * Undefined (plain fetch) when private networks are allowed. `resolve`: tests inject a resolver.
 */
export function guardedUpstreamFetch(limits: GatewayLimits, resolve?: ResolveAll): typeof fetch | undefined {
  if (limits.allowPrivateNetwork) return undefined;
  return pinnedFetch({ allowHttp: limits.allowHttp, lookup: publicLookupVia(resolve ?? systemResolve) });
}
