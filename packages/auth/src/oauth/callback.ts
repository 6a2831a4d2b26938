import type { Handler } from 'hono';
import { idpSubject } from '@ai-backend/core/internal';
import { isListedAdmin } from '../jwt/identityFromClaims.js';
import { randomToken, sha256 } from './crypto.js';
import { errorPage, redirectToClient, withCookies } from './oauthResponses.js';
import { boundToFlow } from './flowBinding.js';
import type { OAuthServices } from './oauthServices.js';
import type { CodeRecord, SessionRecord, UpstreamRecord } from './records.js';
import { subjectIssuer } from './upstreamProvider.js';

/** Provider errors that mean "the user said no or could not sign in", passed on as access_denied. */
const DENIALS = new Set(['access_denied', 'login_required', 'consent_required', 'interaction_required', 'account_selection_required']);

/**
 * GET /oauth/callback: the identity provider sends the user back here. We exchange its code
 * (with our PKCE verifier), learn who signed in, open a session, and send the user on to the
 * client with our own single-use, short-lived code. The provider's tokens stop here.
 */
export function callbackHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const state = c.req.query('state');
    // Single use: the state record is removed as it is read.
    const flow = state ? await s.store.take<UpstreamRecord>('upstream', sha256(state)) : undefined;
    if (!flow) {
      return errorPage(c, 400, 'Sign-in expired', 'This sign-in has expired or was already completed. Start again from your application.');
    }
    // Completed only in the browser that approved the consent (flowBinding.ts): a flow approved
    // in one browser and carried to another (a victim's, signed in at the provider) is refused.
    const callbackPath = new URL(flow.callbackUrl).pathname;
    if (!boundToFlow(c, state!, flow.bindingHash, callbackPath)) {
      s.logger.warn('oauth callback refused: not the browser that approved the consent', {
        event: 'flow_binding_failed',
        clientId: flow.request.clientId,
      });
      return errorPage(
        c,
        403,
        'Sign-in refused',
        'This sign-in was approved in another browser. Start again from your application, in this browser.',
      );
    }
    const { request } = flow;
    const back = (params: Record<string, string | undefined>) =>
      withCookies(c, redirectToClient(request.redirectUri, { ...params, state: request.state, iss: request.issuer }));

    const upstreamError = c.req.query('error');
    if (upstreamError) {
      s.logger.info('identity provider returned an error', { event: 'upstream_denied', error: upstreamError.slice(0, 64) });
      return DENIALS.has(upstreamError)
        ? back({ error: 'access_denied', error_description: 'sign-in was cancelled or refused' })
        : back({ error: 'server_error', error_description: 'the identity provider reported an error' });
    }
    const code = c.req.query('code');
    if (!code) return back({ error: 'server_error', error_description: 'the identity provider sent no code' });

    let user;
    let issuer: string;
    try {
      const ep = await s.upstream.endpoints();
      issuer = subjectIssuer(ep);
      const iss = c.req.query('iss');
      // RFC 9207 §2.4 (mix-up attacks): when the provider names itself, it must be the one we
      // sent the user to (simple string comparison); a provider that promised `iss` must send it.
      const mixedUp = iss !== undefined ? ep.issuer !== undefined && iss !== ep.issuer : ep.issInResponses === true;
      if (mixedUp) {
        s.logger.warn('identity provider response failed the issuer check', { event: 'upstream_iss_mismatch' });
        return back({ error: 'server_error', error_description: 'the response came from another identity provider' });
      }
      user = await s.upstream.signIn({ code, callbackUrl: flow.callbackUrl, verifier: flow.verifier, nonce: flow.nonce });
    } catch (err) {
      s.logger.warn('sign-in with the identity provider failed', {
        event: 'upstream_failed',
        error: err instanceof Error ? err.message : String(err),
      });
      return back({ error: 'server_error', error_description: 'sign-in with the identity provider failed' });
    }

    // Qualified by the provider's issuer, so that with authType 'both' an IdP user 'user-77' and
    // the JWT subject 'user-77' never share stored state (trpc/subjectId.ts in core).
    const sub = idpSubject(issuer, user.sub);
    // The admin scope is only ever granted to configured administrators.
    const admin = isListedAdmin(s.settings.admin, { sub, email: user.email, emailVerified: user.emailVerified });
    const scopes = request.scopes.filter((sc) => sc !== s.settings.admin.scope || admin);
    const now = Date.now();
    const codeTtlMs = s.settings.authCodeTtlSec * 1000;
    const sid = randomToken(24);
    const session: SessionRecord = {
      sid,
      sub,
      clientId: request.clientId,
      scopes,
      resource: request.resource,
      issuer: request.issuer,
      createdAt: now,
      // Short until the code is exchanged; the token endpoint extends it.
      exp: now + codeTtlMs + 60_000,
    };
    if (user.email) {
      session.email = user.email;
      session.emailVerified = user.emailVerified === true;
    }
    if (user.name) session.name = user.name;
    await s.store.put('session', sid, session);

    const ourCode = randomToken(32);
    await s.store.put<CodeRecord>('code', sha256(ourCode), {
      sid,
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      ...(request.redirectUriOmitted ? { redirectUriOmitted: true as const } : {}),
      codeChallenge: request.codeChallenge,
      exp: now + codeTtlMs,
    });
    s.logger.info('user signed in', { event: 'oauth_signin', sub, clientId: request.clientId });
    return back({ code: ourCode });
  };
}
