import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { randomToken, safeEqual, sha256 } from './crypto.js';

/**
 * The browser that approved a consent is the one that must come back to /oauth/callback (the
 * MCP confused-deputy rule). Without this, consent approved in an attacker's browser could be
 * completed in a victim's: the attacker sends the victim the identity provider's URL for the
 * attacker's flow, the victim's provider session signs in without a page, and the code for the
 * victim's account goes to the attacker's client. A secret set as a cookie with the approval,
 * whose hash the flow keeps, binds the two: a callback without it is refused.
 *
 * The cookie is per flow (named after its state), HttpOnly, limited to the callback's path and
 * SameSite=Lax: sent on the identity provider's top-level redirect back to us, not on requests
 * other sites make in the background.
 */
export function bindFlow(c: Context, state: string, callbackPath: string, secure: boolean, maxAgeSec: number): string {
  const binding = randomToken(32);
  setCookie(c, cookieName(state), binding, { path: callbackPath, httpOnly: true, sameSite: 'Lax', secure, maxAge: maxAgeSec });
  return sha256(binding);
}

/** Whether this request carries the flow's binding cookie; the cookie is cleared either way. */
export function boundToFlow(c: Context, state: string, bindingHash: string | undefined, callbackPath: string): boolean {
  const binding = getCookie(c, cookieName(state));
  deleteCookie(c, cookieName(state), { path: callbackPath });
  return binding !== undefined && bindingHash !== undefined && safeEqual(sha256(binding), bindingHash);
}

const cookieName = (state: string) => `aib_flow_${sha256(state).slice(0, 16)}`;
