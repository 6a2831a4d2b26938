import { CORE_ERROR_TABLE, isCoreError, publicBaseUrl, type Identity, type Storage } from '@ai-backend/core/internal';
import { Hono, type Context } from 'hono';
import type { VerifyAccessTokenOptions } from './accessTokens.js';
import { authorizeHandler, consentHandler } from './authorize.js';
import { callbackHandler } from './callback.js';
import { bearerChallenge, resourceMetadataUrl, type BearerChallenge } from './challenge.js';
import { jwksHandler } from './jwks.js';
import { metadataHandler, preflightHandler } from './metadata.js';
import { oauthError } from './oauthResponses.js';
import { openOAuthServices, type OAuthServerDeps, type OAuthServices } from './oauthServices.js';
import { resolveOAuthSettings } from './oauthSettings.js';
import { protectedResourceHandler } from './protectedResource.js';
import { rateLimit } from './rateLimit.js';
import { registerHandler } from './register.js';
import { revokeHandler } from './revoke.js';
import { tokenHandler } from './token.js';
import { userinfoHandler } from './userinfo.js';

export interface CreateOAuthRoutesOptions {
  /** Keep sessions in this storage instead of `oauth.sessionStorage` (or, when unset, the server's storage). */
  storage?: Storage;
  /**
   * Client address used by the rate limits. Default: core's `requestClientIp` (the last
   * X-Forwarded-For entry when `trustProxy` is set, else the socket address on
   * @hono/node-server, else 'unknown').
   */
  clientIp?: (c: Context) => string;
}

export interface OAuthRoutes {
  /** The authorization server's routes; mount at the root: `app.route('/', oauth.app)`. */
  readonly app: Hono;
  /**
   * Verify one of our access tokens (for `createAuthenticator({ oauthVerifier })`). Resolves to
   * the identity or rejects with CoreError INVALID_TOKEN / SESSION_NOT_FOUND. With `resource`
   * (the /mcp URL of the request) the audience is checked against it; with `oauth.publicUrl`
   * set, against that always.
   */
  verifyAccessToken(token: string, opts?: VerifyAccessTokenOptions): Promise<Identity | null>;
  /** The `WWW-Authenticate` value for a 401/403 on /mcp, pointing at our protected-resource metadata. */
  challenge(req: Request, c?: Omit<BearerChallenge, 'resourceMetadata'>): string;
  /** Start signing with a new key; the previous one stays published until its tokens expire. */
  rotateSigningKey(): Promise<string>;
  /** Resolves once session storage and signing keys are ready (rejects if they cannot be opened). */
  ready(): Promise<void>;
  /** Close the session storage if it was opened here. Idempotent. */
  close(): Promise<void>;
}

/**
 * The OAuth 2.1 authorization server: discovery (RFC 8414, RFC 9728), dynamic registration
 * (RFC 7591), authorize with consent, delegated sign-in at the configured identity provider,
 * token (PKCE, refresh rotation), userinfo, revocation and JWKS.
 *
 * Config is checked synchronously (ConfigError); storage and keys open in the background and
 * requests wait for them.
 */
export function createOAuthRoutes(deps: OAuthServerDeps, opts: CreateOAuthRoutesOptions = {}): OAuthRoutes {
  const settings = resolveOAuthSettings(deps.config);
  const opened = openOAuthServices(deps, settings, { storage: opts.storage, clientIp: opts.clientIp });
  opened.catch(() => undefined); // reported through ready() and requests, not as unhandled
  const services = (): Promise<OAuthServices> => opened.then((o) => o.services);

  const app = new Hono();
  app.onError((err, c) => {
    if (isCoreError(err) && CORE_ERROR_TABLE[err.appCode].http >= 500) {
      deps.logger.error('oauth endpoint failed', { code: err.appCode, error: err.message });
      return oauthError(c, 503, 'temporarily_unavailable', 'the authorization server cannot serve this request right now', {
        'Retry-After': '5',
      });
    }
    deps.logger.error('oauth endpoint failed', { error: err instanceof Error ? err.message : String(err) });
    return oauthError(c, 500, 'server_error', 'internal error');
  });

  const open = ['/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server/*'];
  for (const path of open) app.get(path, metadataHandler(services));
  for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/*']) {
    app.get(path, protectedResourceHandler(services));
    open.push(path);
  }
  app.get('/.well-known/jwks.json', jwksHandler(services));
  // Only discovery has the fixed CORS answer; the other endpoints follow the server's `cors`.
  open.push('/.well-known/jwks.json');
  for (const path of open) app.options(path, preflightHandler);

  app.post('/register', rateLimit(services, 'register'), registerHandler(services));
  app.get('/oauth/authorize', rateLimit(services, 'authorize'), authorizeHandler(services));
  app.post('/oauth/authorize', rateLimit(services, 'consent'), consentHandler(services));
  app.get('/oauth/callback', rateLimit(services, 'callback'), callbackHandler(services));
  app.post('/oauth/token', rateLimit(services, 'token'), tokenHandler(services));
  app.on(['GET', 'POST'], '/oauth/userinfo', rateLimit(services, 'userinfo'), userinfoHandler(services));
  app.post('/oauth/revoke', rateLimit(services, 'revoke'), revokeHandler(services));

  let closing: Promise<void> | undefined;
  return {
    app,
    async verifyAccessToken(token, verifyOpts) {
      const { identity } = await (await services()).tokens.verify(token, verifyOpts);
      return identity;
    },
    challenge(req, c = {}) {
      const base = publicBaseUrl(req.url, req.headers, deps.config);
      return bearerChallenge({ ...c, resourceMetadata: resourceMetadataUrl(base) });
    },
    async rotateSigningKey() {
      return (await services()).keys.rotate();
    },
    async ready() {
      await opened;
    },
    close() {
      closing ??= opened.then(
        (o) => o.close(),
        () => undefined,
      );
      return closing;
    },
  };
}
