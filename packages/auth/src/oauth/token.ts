import type { Context, Handler } from 'hono';
import { isListedAdmin } from '../jwt/identityFromClaims.js';
import { sameResource } from './challenge.js';
import { authenticateClient, readForm } from './clientAuth.js';
import { PKCE_VERIFIER, pkceChallenge, randomToken, safeEqual, sha256 } from './crypto.js';
import { NO_STORE, oauthError } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';
import type { ClientRecord, CodeRecord, RefreshRecord, SessionRecord } from './records.js';
import { SESSION_REVOKED } from './sessionStore.js';

/**
 * POST /oauth/token: authorization_code (PKCE verified, code single-use; a replayed code
 * revokes what it produced) and refresh_token (rotation: each refresh token works once, and a
 * reused one revokes the whole family, i.e. the session).
 */
export function tokenHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const err = (status: 400 | 401, error: string, description: string, headers: Record<string, string> = {}) =>
      oauthError(c, status, error, description, headers);
    const form = await readForm(c);
    if (!form) return err(400, 'invalid_request', 'expected an application/x-www-form-urlencoded body without repeated parameters');
    const auth = await authenticateClient(c, form, s);
    if (!auth.ok) return err(401, 'invalid_client', auth.description, auth.usedBasic ? { 'WWW-Authenticate': 'Basic realm="oauth"' } : {});
    const client = auth.client;

    switch (form.get('grant_type')) {
      case 'authorization_code':
        return authorizationCode(c, s, form, client, err);
      case 'refresh_token':
        return refreshToken(c, s, form, client, err);
      default:
        return err(400, 'unsupported_grant_type', "grant_type must be 'authorization_code' or 'refresh_token'");
    }
  };
}

type Fail = (status: 400 | 401, error: string, description: string) => Response;

async function authorizationCode(c: Context, s: OAuthServices, form: URLSearchParams, client: ClientRecord, err: Fail): Promise<Response> {
  const code = form.get('code');
  const redirectUri = form.get('redirect_uri');
  const verifier = form.get('code_verifier');
  if (!code || !verifier) return err(400, 'invalid_request', 'code and code_verifier are required');
  if (!PKCE_VERIFIER.test(verifier)) return err(400, 'invalid_request', 'malformed code_verifier');

  const used = await s.store.consume<CodeRecord>('code', sha256(code));
  if (used.status === 'missing') return err(400, 'invalid_grant', 'invalid or expired authorization code');
  if (used.status === 'reused') {
    // OAuth 2.1 §4.1.3: a code presented twice was probably stolen; revoke its tokens.
    await revokeSession(s, used.value.sid, 'authorization code reused');
    return err(400, 'invalid_grant', 'authorization code already used');
  }
  const rec = used.value;
  if (rec.clientId !== client.client_id) return err(400, 'invalid_grant', 'code was issued to another client');
  // OAuth 2.1 §4.1.3: required, and identical, when the authorization request included it.
  if (redirectUri === null ? !rec.redirectUriOmitted : redirectUri !== rec.redirectUri)
    return err(400, 'invalid_grant', 'redirect_uri differs from the authorization request');
  if (!safeEqual(pkceChallenge(verifier), rec.codeChallenge)) return err(400, 'invalid_grant', 'PKCE verification failed');

  const session = await s.store.get<SessionRecord>('session', rec.sid);
  if (!session) return err(400, 'invalid_grant', 'session not found');
  const resource = form.get('resource');
  if (resource !== null && !sameResource(resource, session.resource))
    return err(400, 'invalid_target', `resource must be ${session.resource}`);
  return issue(c, s, session, session.scopes, client);
}

async function refreshToken(c: Context, s: OAuthServices, form: URLSearchParams, client: ClientRecord, err: Fail): Promise<Response> {
  if (!client.grant_types.includes('refresh_token')) return err(400, 'unauthorized_client', 'client may not use refresh tokens');
  const token = form.get('refresh_token');
  if (!token) return err(400, 'invalid_request', 'refresh_token is required');
  const id = sha256(token);

  // Every check runs on a peek: a refused request (another client, wrong resource, wider
  // scope) must not use the token up, or the holder's next valid refresh would read as reuse
  // and revoke the session. Only a request that will succeed consumes it.
  const peek = await s.store.get<RefreshRecord>('refresh', id);
  if (!peek) return err(400, 'invalid_grant', 'invalid or expired refresh token');
  if (peek.usedAt !== undefined) return reused(s, peek.sid, err);
  if (peek.clientId !== client.client_id) return err(400, 'invalid_grant', 'refresh token was issued to another client');
  const session = await s.store.get<SessionRecord>('session', peek.sid);
  if (!session) return err(400, 'invalid_grant', 'session not found');
  const resource = form.get('resource');
  if (resource !== null && !sameResource(resource, session.resource))
    return err(400, 'invalid_target', `resource must be ${session.resource}`);
  const asked = form.get('scope')?.split(' ').filter(Boolean);
  if (asked?.some((x) => !peek.scopes.includes(x))) return err(400, 'invalid_scope', 'scope exceeds the original grant');

  const used = await s.store.consume<RefreshRecord>('refresh', id);
  if (used.status === 'missing') return err(400, 'invalid_grant', 'invalid or expired refresh token');
  if (used.status === 'reused') return reused(s, used.value.sid, err);
  // Roles are evaluated again at every refresh: a user removed from admin.users loses the admin
  // scope here (and, being no longer listed, admin rights on every request at once).
  const keep = (scopes: string[]) => scopes.filter((sc) => sc !== s.settings.admin.scope || isListedAdmin(s.settings.admin, session));
  const grant = keep(used.value.scopes);
  const scopes = asked && asked.length > 0 ? keep(asked) : grant;
  return issue(c, s, { ...session, scopes: keep(session.scopes) }, scopes, client, grant);
}

/**
 * Rotation (OAuth 2.1 §4.3.1): the old token came back, so one of two holders is an attacker.
 * Revoke the family: every token of the session stops working.
 */
async function reused(s: OAuthServices, sid: string, err: Fail): Promise<Response> {
  await revokeSession(s, sid, 'refresh token reused');
  return err(400, 'invalid_grant', 'refresh token already used; the session has been revoked');
}

/** Mint an access token and, for clients allowed to refresh, the next refresh token of the family. */
async function issue(
  c: Context,
  s: OAuthServices,
  session: SessionRecord,
  scopes: string[],
  client: ClientRecord,
  grantScopes: string[] = session.scopes,
): Promise<Response> {
  const now = Date.now();
  const refreshTtlMs = s.settings.refreshTokenTtlSec * 1000;
  const canRefresh = client.grant_types.includes('refresh_token');
  // The session lives as long as its newest refresh token (sliding), or as its access token. Only
  // while it still exists: a revocation since it was read (the code or refresh token reused, the
  // client's /oauth/revoke) deleted it, and a plain write would bring the revoked session back.
  const exp = now + (canRefresh ? refreshTtlMs : s.settings.accessTokenTtlSec * 1000);
  const kept = await s.store.update<SessionRecord>('session', session.sid, (current) => ({ ...current, scopes: session.scopes, exp }));
  if (!kept) return oauthError(c, 400, 'invalid_grant', 'session not found');
  const access = await s.tokens.issue(session, scopes);
  // A client that obtains tokens is in use: keep it for clientTtlSec after its last token (sliding,
  // written at most once a day); unused registrations expire after unusedClientTtlSec.
  const keepUntil = now + s.settings.registration.clientTtlSec * 1000;
  if (!client.metadata_document && client.exp < keepUntil - 86_400_000)
    await s.store.put('client', client.client_id, { ...client, exp: keepUntil });
  let refresh: string | undefined;
  if (canRefresh) {
    refresh = randomToken(32);
    await s.store.put<RefreshRecord>('refresh', sha256(refresh), {
      sid: session.sid,
      clientId: client.client_id,
      scopes: grantScopes,
      exp: now + refreshTtlMs,
    });
  }
  return c.json(
    {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: access.expiresIn,
      scope: scopes.join(' '),
      ...(refresh ? { refresh_token: refresh } : {}),
    },
    200,
    NO_STORE,
  );
}

/** Remove a session: its access tokens fail as 'session not found', its refresh tokens stop working. */
export async function revokeSession(s: OAuthServices, sid: string, reason: string): Promise<void> {
  await s.store.delete('session', sid);
  // Here at once; every other instance when the signal arrives (each caches sessions for sessionCacheMs).
  await s.signals.publish(SESSION_REVOKED, sid);
  s.logger.warn('oauth session revoked', { event: 'session_revoked', reason });
}
