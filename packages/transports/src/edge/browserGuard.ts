import type { MiddlewareHandler } from 'hono';
import { isLoopbackHost, type ResolvedConfig } from '@ai-backend/core/internal';
import { edgeError, type EdgeFamily } from './edgeError.js';
import { requestOrigin } from './requestFacts.js';

/** How one route is guarded. */
export interface GuardedRoute {
  /** The error shape the route's clients read. */
  family: EdgeFamily;
  /**
   * API routes (/trpc, /typedrpc, /rpc, /mcp) also refuse browser requests that carry no Origin
   * but are marked cross-site by the browser (`Sec-Fetch-Site`): no-cors GETs and navigations.
   * Not the OAuth routes: the identity provider redirects the browser back to /oauth/callback.
   */
  api: boolean;
  /** POST bodies only as application/json (415 otherwise), so every cross-site POST needs a preflight. */
  jsonOnly: boolean;
}

function hostName(hostHeader: string): string {
  // [::1]:8000 → [::1]; localhost:8000 → localhost
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1).toLowerCase();
  return hostHeader.split(':')[0]!.toLowerCase();
}

/** host[:port] of an absolute URL, without parsing it whole. */
function urlHost(url: string): string {
  const start = url.indexOf('//') + 2;
  const end = url.indexOf('/', start);
  return url.slice(start, end === -1 ? undefined : end);
}

/** The origins this request was addressed to: its own (from Host, or the forwarded host) and oauth.publicUrl. */
function ownOrigins(req: Request, config: ResolvedConfig): string[] {
  const headers = req.headers;
  let proto = req.url.startsWith('https:') ? 'https' : 'http';
  let host = headers.get('host') ?? urlHost(req.url);
  if (config.trustProxy) {
    const fp = headers.get('x-forwarded-proto')?.split(',')[0]?.trim();
    const fh = headers.get('x-forwarded-host')?.split(',')[0]?.trim();
    if (fp === 'http' || fp === 'https') proto = fp;
    if (fh) host = fh;
  }
  const own = host ? [`${proto}://${host.toLowerCase()}`] : [];
  if (config.oauth.publicUrl) own.push(new URL(config.oauth.publicUrl).origin);
  return own;
}

/**
 * Browser safety for every route that acts (MCP transport security, DNS rebinding): one rule
 * set, built once per config.
 * - Host: when `mcp.allowedHosts` is set it must be listed; else, bound to loopback, it must be
 *   a loopback name (a rebinding page's Host is its own domain).
 * - Origin: when the server is bound to loopback or runs without authentication, or an explicit
 *   origin list is configured, a browser Origin must be the server's own origin, in the
 *   explicit `cors.origin` list or in `mcp.allowedOrigins`. Another port, or `localhost` for a
 *   server addressed as `127.0.0.1`, is another origin.
 * - Content type: see GuardedRoute.jsonOnly.
 * The answer is 403 (415) without CORS headers, so a refused page cannot even read why.
 *
 * `then`, when given, runs in the same middleware once the request is accepted (the route's body
 * limit): one layer instead of two.
 */
export function createBrowserGuard(config: ResolvedConfig): (route: GuardedRoute, then?: MiddlewareHandler) => MiddlewareHandler {
  const loopback = isLoopbackHost(config.host);
  const unauthenticated = config.auth.servesWithoutAuth;
  const allowedHosts = config.mcp.allowedHosts ? new Set(config.mcp.allowedHosts.map((h) => h.toLowerCase())) : null;
  const explicit = new Set(
    [...(config.cors.origin.includes('*') ? [] : config.cors.origin), ...(config.mcp.allowedOrigins ?? [])].map((o) => o.toLowerCase()),
  );
  const strictBrowser = loopback || unauthenticated;
  const checkOrigins = strictBrowser || explicit.size > 0;

  const refusal = (req: Request, route: GuardedRoute): string | null => {
    // Requests built in-process (app.request, another fetch runtime) carry their host in the URL only.
    const host = req.headers.get('host') ?? urlHost(req.url);
    const name = hostName(host);
    if (allowedHosts ? !allowedHosts.has(name) && !allowedHosts.has(host.toLowerCase()) : loopback && !isLoopbackHost(name))
      return 'host not allowed';
    const origin = requestOrigin(req, config.trustProxy)?.toLowerCase();
    if (origin !== undefined) {
      // 'null' (sandboxed frames, data: pages) is never allowed.
      if (checkOrigins && !explicit.has(origin) && !ownOrigins(req, config).includes(origin)) return 'origin not allowed';
    } else if (strictBrowser && route.api) {
      const site = req.headers.get('sec-fetch-site');
      if (site === 'cross-site' || site === 'same-site') return 'cross-site request without an origin';
    }
    return null;
  };

  // Not `async`: an accepted request goes on to `then` (the body limit) or `next` in the same
  // layer of Hono's compose, without a promise of its own.
  return (route, then) => (c, next) => {
    const req = c.req.raw;
    const refused = refusal(req, route);
    if (refused) return Promise.resolve(edgeError(route.family, 403, `forbidden: ${refused}`));
    if (route.jsonOnly && req.method === 'POST') {
      const type = req.headers.get('content-type');
      const media = type ? type.split(';', 1)[0]!.trim().toLowerCase() : '';
      if (media !== 'application/json')
        return Promise.resolve(edgeError(route.family, 415, 'unsupported media type: send the body as application/json'));
    }
    return then ? then(c, next) : next();
  };
}
