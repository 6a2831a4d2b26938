import type { Context, Handler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { mcpResourceUrl, sameResource } from './challenge.js';
import { isUrlClientId } from './clientIdMetadata.js';
import { readForm } from './clientAuth.js';
import { consentPage } from './consentPage.js';
import { bindFlow } from './flowBinding.js';
import { PKCE_CHALLENGE, pkceChallenge, randomToken, safeEqual, sha256 } from './crypto.js';
import { allScopes } from './metadata.js';
import { errorPage, PAGE_HEADERS, redirectToClient, withCookies } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';
import type { AuthorizationRequest, PendingRecord, UpstreamRecord } from './records.js';
import { matchRedirectUri } from './redirectUris.js';

/** A consent request and our state towards the provider are valid this long (10 minutes). */
const FLOW_TTL_MS = 10 * 60_000;

function csrfCookieName(requestId: string): string {
  return `aib_consent_${requestId.slice(0, 16)}`;
}

/** Path part of the public base ('' at the root), for cookie paths. */
function basePath(base: string): string {
  return new URL(base).pathname.replace(/\/+$/, '');
}

/**
 * GET /oauth/authorize: validate the request (client, exact redirect URI, PKCE S256, resource),
 * then show the consent page. Errors that make the redirect URI untrustworthy are shown here;
 * the others go back to the client (RFC 6749 §4.1.2.1) with `state` and `iss`.
 */
export function authorizeHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
    const url = new URL(c.req.url);
    const q = (name: string) => {
      const all = url.searchParams.getAll(name);
      return all.length === 1 ? all[0] : all.length === 0 ? undefined : null; // null: repeated
    };
    const clientId = q('client_id');
    const found = clientId ? await s.findClient(clientId) : { problem: 'unknown client' };
    const client = found.client;
    if (!client) {
      return clientId && isUrlClientId(clientId)
        ? errorPage(c, 400, 'Application not accepted', `This application's description could not be used: ${found.problem}.`)
        : errorPage(c, 400, 'Unknown application', 'This sign-in link names an application that is not registered here.');
    }
    let redirectUri = q('redirect_uri');
    // OAuth 2.1 §2.3.2: with one registered redirect URI the request may leave it out.
    const redirectUriOmitted = redirectUri === undefined;
    if (redirectUriOmitted && client.redirect_uris.length === 1) redirectUri = client.redirect_uris[0];
    if (!redirectUri || !matchRedirectUri(client.redirect_uris, redirectUri)) {
      return errorPage(c, 400, 'Invalid redirect address', 'The redirect address does not match what this application registered.');
    }

    const state = q('state');
    const fail = (error: string, description: string) =>
      redirectToClient(redirectUri, { error, error_description: description, state: state ?? undefined, iss: base });
    if (state === null || (state && state.length > 2048)) return fail('invalid_request', 'invalid state');
    if (q('response_type') !== 'code') return fail('unsupported_response_type', "response_type must be 'code'");
    if (!client.grant_types.includes('authorization_code'))
      return fail('unauthorized_client', 'client may not use the authorization code grant');
    const challenge = q('code_challenge');
    if (q('code_challenge_method') !== 'S256' || !challenge || !PKCE_CHALLENGE.test(challenge)) {
      return fail('invalid_request', 'PKCE with code_challenge_method S256 is required');
    }

    const resource = mcpResourceUrl(base);
    const askedResource = q('resource');
    // RFC 8707: the only resource we issue tokens for is our /mcp endpoint.
    if (askedResource === null || (askedResource !== undefined && !sameResource(askedResource, resource))) {
      return fail('invalid_target', `resource must be ${resource}`);
    }
    const known = new Set(allScopes(s.settings));
    const asked = (q('scope') ?? '').split(' ').filter((x) => known.has(x));
    const scopes = asked.length > 0 ? [...new Set(asked)] : s.settings.scopesSupported;

    const request: AuthorizationRequest = {
      clientId: client.client_id,
      redirectUri,
      codeChallenge: challenge,
      scopes,
      resource,
      issuer: base,
    };
    if (state) request.state = state;
    if (redirectUriOmitted) request.redirectUriOmitted = true;
    const requestId = randomToken(24);
    const csrfToken = randomToken(32);
    await s.store.put<PendingRecord>('pending', requestId, { request, csrfHash: sha256(csrfToken), exp: Date.now() + FLOW_TTL_MS });

    // The CSRF token also lives in a SameSite=Strict cookie: a cross-site page cannot post the
    // consent form on the user's behalf, even with a request id it created itself.
    setCookie(c, csrfCookieName(requestId), csrfToken, {
      path: `${basePath(base)}/oauth/authorize`,
      httpOnly: true,
      sameSite: 'Strict',
      secure: base.startsWith('https:'),
      maxAge: FLOW_TTL_MS / 1000,
    });
    const providerHost = await s.upstream.endpoints().then(
      (e) => new URL(e.authorizationUrl).host,
      () => undefined,
    );
    const html = consentPage({ client, request, action: `${basePath(base)}/oauth/authorize`, requestId, csrfToken, providerHost });
    return c.html(html, 200, PAGE_HEADERS);
  };
}

/** POST /oauth/authorize: the consent decision. Approval sends the user to the identity provider. */
export function consentHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
    const origin = c.req.header('origin');
    // `Origin: null` is what sandboxed iframes, data: URLs and cross-site redirects send: it proves
    // nothing about who built the form, so it is refused like any other site. (Our pages use
    // Referrer-Policy same-origin, so browsers send our real origin with the consent POST.)
    if (origin !== undefined && origin !== new URL(base).origin) {
      return errorPage(c, 403, 'Request refused', 'The consent form was submitted from another site.');
    }
    const form = await readForm(c);
    const requestId = form?.get('request_id') ?? '';
    const csrfToken = form?.get('csrf_token') ?? '';
    const pending = requestId ? await s.store.get<PendingRecord>('pending', requestId) : undefined;
    if (!pending) return expired(c);
    const cookie = getCookie(c, csrfCookieName(requestId));
    if (!cookie || !safeEqual(cookie, csrfToken) || !safeEqual(sha256(csrfToken), pending.csrfHash)) {
      s.logger.warn('oauth consent refused: CSRF check failed', { event: 'csrf_failed', clientId: pending.request.clientId });
      return errorPage(c, 403, 'Request refused', 'This consent could not be verified. Start the sign-in again from your application.');
    }
    // Single use: of two submissions only one proceeds.
    if (!(await s.store.take<PendingRecord>('pending', requestId))) return expired(c);
    deleteCookie(c, csrfCookieName(requestId), { path: `${basePath(base)}/oauth/authorize` });
    const { request } = pending;

    if (form?.get('decision') !== 'approve') {
      s.logger.info('oauth consent denied', { event: 'consent_denied', clientId: request.clientId });
      const res = redirectToClient(
        request.redirectUri,
        { error: 'access_denied', error_description: 'the user denied access', state: request.state, iss: request.issuer },
        303,
      );
      return withCookies(c, res);
    }

    // Our own state and PKCE towards the provider, created only now that consent is given.
    const state = randomToken(32);
    const verifier = randomToken(32);
    const nonce = randomToken(16);
    const callbackUrl = `${base}/oauth/callback`;
    let location: string;
    try {
      location = await s.upstream.authorizationUrl({ callbackUrl, state, codeChallenge: pkceChallenge(verifier), nonce });
    } catch (err) {
      s.logger.error('identity provider unavailable', { error: err instanceof Error ? err.message : String(err) });
      return errorPage(c, 502, 'Sign-in unavailable', 'The identity provider could not be reached. Try again later.');
    }
    // This browser, the one that approved, is the one that must come back to the callback.
    const bindingHash = bindFlow(c, state, `${basePath(base)}/oauth/callback`, base.startsWith('https:'), FLOW_TTL_MS / 1000);
    await s.store.put<UpstreamRecord>('upstream', sha256(state), {
      request,
      verifier,
      nonce,
      callbackUrl,
      bindingHash,
      exp: Date.now() + FLOW_TTL_MS,
    });
    return withCookies(c, new Response(null, { status: 303, headers: { Location: location, 'Cache-Control': 'no-store' } }));
  };
}

function expired(c: Context): Response {
  return errorPage(c, 400, 'Sign-in expired', 'This sign-in request has expired or was already used. Start again from your application.');
}
