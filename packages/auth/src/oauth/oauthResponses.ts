import type { Context } from 'hono';

/** Answers carrying tokens or codes must never be cached (RFC 6749 §5.1). */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/** An OAuth error body (RFC 6749 §5.2): `{ error, error_description }`. */
export function oauthError(
  c: Context,
  status: 400 | 401 | 403 | 404 | 429 | 500 | 502 | 503,
  error: string,
  description?: string,
  headers: Record<string, string> = {},
): Response {
  return c.json({ error, ...(description ? { error_description: description } : {}) }, status, { ...NO_STORE, ...headers });
}

/**
 * Send the browser back to the client with an error (RFC 6749 §4.1.2.1) plus `state` and our
 * `iss` (RFC 9207). Only ever called once the redirect URI has been checked against the client.
 */
export function redirectToClient(redirectUri: string, params: Record<string, string | undefined>, status: 302 | 303 = 302): Response {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return new Response(null, { status, headers: { Location: url.href, ...NO_STORE } });
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape text for HTML element content and quoted attributes. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

/**
 * Security headers of our HTML pages: no framing (clickjacking), no scripts, no referrer to
 * other sites. 'same-origin' rather than 'no-referrer': under 'no-referrer' Chromium sends
 * `Origin: null` with the consent form's POST, which the consent check and the HTTP edge refuse.
 */
export const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  ...NO_STORE,
} as const;

/** A plain error page, for failures where redirecting to the client would be unsafe. */
export function errorPage(c: Context, status: 400 | 403 | 404 | 429 | 500 | 502 | 503, title: string, message: string): Response {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem">
<h1 style="font-size:1.3rem">${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;
  return c.html(body, status, PAGE_HEADERS);
}

/** Carry cookies set on the Hono context (a flow's cookies set or cleared) over to a hand-built response. */
export function withCookies(c: Context, res: Response): Response {
  for (const cookie of c.res.headers.getSetCookie()) res.headers.append('Set-Cookie', cookie);
  return res;
}
