import type { Context as HonoContext } from 'hono';
import { requestClientIp } from '@ai-backend/core/internal';

/**
 * Facts about a request that depend on trustProxy: the client address, the public origin
 * (for CORS and OAuth redirects). Forwarded headers are read only when trustProxy is set.
 */
/** The client address (core's one rule: forwarded only with trustProxy, else the socket). */
export function clientIp(c: HonoContext, trustProxy: boolean): string {
  return requestClientIp(c.req.header('x-forwarded-for'), c.env, trustProxy);
}

/** The Origin header, or the forwarded origin when behind a trusted proxy. */
export function requestOrigin(req: Request, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const fwd = req.headers.get('x-forwarded-origin');
    if (fwd) return fwd;
  }
  return req.headers.get('origin') ?? undefined;
}

/**
 * Bearer token from the Authorization header, else the `x-api-key` header (the Anthropic wire
 * format; any credential sent there is verified like a bearer token). Tokens in the query string
 * are refused elsewhere.
 */
export function bearerToken(req: Request): string | null {
  const h = req.headers.get('authorization');
  if (!h) {
    const key = req.headers.get('x-api-key');
    return key === null ? null : key.trim() || '\u0000';
  }
  const m = /^Bearer[ ]+(.*)$/i.exec(h);
  // A malformed Authorization header counts as a presented, invalid credential.
  return m ? m[1]!.trim() || '\u0000' : '\u0000';
}

/** True when the query string carries a token (RFC 6750 §2.3 is not allowed here). */
export function tokenInQuery(url: URL): boolean {
  return url.searchParams.has('access_token') || url.searchParams.has('token') || url.searchParams.has('id_token');
}

/**
 * {@link tokenInQuery} for a request URL, parsing it only when its query could name a token: a
 * literal `token=`, or a percent-escape (`access_tok%65n=` is `access_token=` once decoded).
 */
export function requestTokenInQuery(url: string): boolean {
  const q = url.indexOf('?');
  if (q < 0) return false;
  const query = url.slice(q);
  return (query.includes('token=') || query.includes('%')) && tokenInQuery(new URL(url));
}
