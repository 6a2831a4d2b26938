import { isIP } from 'node:net';
import { guardedUrlProblem, isPublicAddress } from '../../net/guardedFetch.js';
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
 * of core/net (https only, no credentials, and the host must resolve to public addresses only)
 * unless `gateway.allowPrivateNetwork`. The name is resolved before the request and again by
 * the connection, so a DNS answer that changes in between (rebinding) is not caught here the
 * way guardedFetch's own agent catches it: Node's fetch takes no lookup hook without undici.
 * Undefined (plain fetch) when private networks are allowed.
 */
export function guardedUpstreamFetch(limits: GatewayLimits): typeof fetch | undefined {
  if (limits.allowPrivateNetwork) return undefined;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const problem = upstreamUrlProblem(url.href, limits);
    if (problem) throw new Error(`refused by the SSRF guard: ${problem}`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!isIP(host)) {
      // node:dns loads with the first remote upstream, not at start-up.
      const { lookup } = await import('node:dns/promises');
      const addresses = await lookup(host, { all: true });
      if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address)))
        throw new Error(`refused by the SSRF guard: ${host} resolves to a non-public address`);
    }
    return fetch(input, init);
  };
}
