import { z } from 'zod';

/**
 * `client_uri` and `logo_uri` (RFC 7591 §2: a web page, an image): http(s) only. Clients and
 * consoles show them as links and images; `javascript:`, `data:` or `file:` there would be a
 * script or a local file in someone else's page.
 */
export const WebUrlSchema = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000);

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

function isLoopbackHttp(u: URL): boolean {
  return u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname);
}

/**
 * Why a redirect URI may not be registered, or null when it may: https anywhere, http only on
 * a loopback host (RFC 8252 §7.3), or a private-use scheme the operator allowed (§7.1).
 * No fragments (RFC 6749 §3.1.2) and no credentials in the URL.
 */
export function redirectUriProblem(uri: string, allowedCustomSchemes: readonly string[]): string | null {
  if (uri.length > 2000) return 'redirect URI too long';
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `not an absolute URL: ${uri}`;
  }
  if (u.hash || uri.includes('#')) return 'redirect URIs must not contain a fragment';
  if (u.username || u.password) return 'redirect URIs must not contain credentials';
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:')
    return isLoopbackHttp(u) ? null : 'http redirect URIs are allowed only on loopback (127.0.0.1, [::1], localhost)';
  const scheme = u.protocol.slice(0, -1);
  if (allowedCustomSchemes.includes(scheme)) return null;
  return `scheme "${scheme}" is not allowed (https, or http on loopback)`;
}

/** A loopback http redirect URI as written: its host text and everything after the port. */
const LOOPBACK_URI = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::\d{1,5})?(\/[^#\s\\]*)?$/;

/**
 * Does the presented redirect URI match a registered one? Exact string match, except that a
 * loopback http URI matches whatever its port (RFC 8252 §7.3: native apps get an ephemeral port).
 * The rest is compared as written, not as a URL parser would normalise it: `127.1`, `0x7f000001`,
 * user info, a backslash or a trailing `?` do not match a registered `127.0.0.1/callback`.
 */
export function matchRedirectUri(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const p = LOOPBACK_URI.exec(presented);
  if (!p) return false;
  return registered.some((r) => {
    const q = LOOPBACK_URI.exec(r);
    return q !== null && q[1] === p[1] && (q[2] ?? '') === (p[2] ?? '');
  });
}
