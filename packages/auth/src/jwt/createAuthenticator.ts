import { CoreError, type Authenticator, type Identity, type Logger, type ResolvedConfig } from '@ai-backend/core/internal';
import { createJwtVerifier, JWT_ALGORITHMS, type JwtVerifier } from './createJwtVerifier.js';
import { isAdminIdentity } from './identityFromClaims.js';
import { inspectToken } from './inspectToken.js';
import { mapJoseError } from './mapJoseError.js';

/**
 * Verifies an access token issued by our own OAuth authorization server. Resolves to the
 * identity, or to null when the token is not valid (unknown key, bad signature, wrong
 * audience...); may also reject with a CoreError (its reason is passed on) or a jose error.
 */
export type OAuthTokenVerifier = (token: string) => Promise<Identity | null>;

/** Asymmetric algorithms our authorization server may sign access tokens with. */
export const DEFAULT_OAUTH_ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA', 'Ed25519'] as const;

export interface CreateAuthenticatorOptions {
  /** The OAuth access-token verifier (from the authorization server). Without it OAuth tokens are refused. */
  oauthVerifier?: OAuthTokenVerifier;
  /**
   * Header `alg` values routed to `oauthVerifier`. Asymmetric only: an HS* or `none` entry is a
   * construction error, so a shared-secret token can never be routed to a public-key verifier
   * or the other way round. Default {@link DEFAULT_OAUTH_ALGORITHMS}.
   */
  oauthAlgorithms?: readonly string[];
  /** Where to warn about configuration we do not honour (requireValidSignature false). */
  logger?: Pick<Logger, 'warn'>;
}

type Route = { kind: 'jwt'; verify: JwtVerifier } | { kind: 'oauth'; verify: OAuthTokenVerifier };

/**
 * The bearer-token verifier installed on the runtime (createRuntime's `authenticator` option).
 *
 * Which verifiers apply follows `mcp.auth`: the shared-secret JWT verifier when JWT is enabled
 * (`mcp.auth.jwt.enabled`, default on for authType 'jwt', 'both' and 'none') and `jwt.secret`
 * is set; the OAuth verifier when one is passed and OAuth is enabled (`mcp.auth.oauth.enabled`,
 * default on for every authType but 'jwt'). A token goes to exactly one verifier, chosen by its
 * header `alg` from explicit allow-lists; keys are never taken from the token. With authType
 * 'none' a presented token is still verified, and refused when nothing can verify it.
 *
 * Never rejects: failures resolve to `{ ok: false, error }` with a CoreError
 * (INVALID_TOKEN, or INSUFFICIENT_SCOPE for a valid token lacking a required scope).
 */
/** A token verifier whose cache of verified tokens can be emptied (admin.clearCache). */
export type ClearableAuthenticator = Authenticator & { clearCache(): void };

export function createAuthenticator(config: ResolvedConfig, opts: CreateAuthenticatorOptions = {}): ClearableAuthenticator {
  // The rules come resolved in config.auth (computed once by core's config schema).
  const { mode, jwtEnabled } = config.auth;
  const jwtCfg = config.mcp.auth.jwt;
  const oauthEnabled = config.mcp.auth.oauth.enabled;

  const routes = new Map<string, Route>();
  let jwtVerifier: JwtVerifier | undefined;
  if (jwtEnabled && config.jwt.secret !== undefined) {
    const verify = (jwtVerifier = createJwtVerifier({
      secret: config.jwt.secret,
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      clockToleranceSec: config.jwt.clockToleranceSec,
      allowExpiredTokens: jwtCfg.allowExpiredTokens,
      requiredScopes: jwtCfg.requiredScopes,
      admin: config.admin,
    }));
    for (const alg of JWT_ALGORITHMS) routes.set(alg, { kind: 'jwt', verify });
  }
  if (oauthEnabled && opts.oauthVerifier) {
    const algs = opts.oauthAlgorithms ?? DEFAULT_OAUTH_ALGORITHMS;
    for (const alg of algs) {
      if (/^(hs|none$)/i.test(alg)) throw new TypeError(`oauthAlgorithms must be asymmetric algorithms, got "${alg}"`);
      routes.set(alg, { kind: 'oauth', verify: opts.oauthVerifier });
    }
  }

  const nothingConfigured =
    mode === 'none'
      ? "bearer tokens cannot be verified: authType is 'none' and no verifier is configured (set jwt.secret)"
      : 'bearer tokens cannot be verified: no token verifier is configured';

  const fail = (error: CoreError) => ({ ok: false as const, error });

  const authenticate: Authenticator = async (token) => {
    // A token already verified (clients resend the same one) skips parsing altogether.
    const known = jwtVerifier?.cached(token);
    if (known) return { ok: true, identity: known };
    try {
      const header = inspectToken(token);
      if (routes.size === 0) return fail(new CoreError('INVALID_TOKEN', nothingConfigured));
      const route = routes.get(header.alg);
      if (!route) return fail(new CoreError('INVALID_TOKEN', 'algorithm not allowed'));
      if (route.kind === 'jwt') return { ok: true, identity: await route.verify(token) };

      const found = await route.verify(token);
      if (!found) return fail(new CoreError('INVALID_TOKEN', 'invalid token'));
      // One administrator rule for every kind of token, whatever the OAuth verifier computed.
      const identity: Identity = { ...found, via: 'oauth', isAdmin: isAdminIdentity(config.admin, { ...found, via: 'oauth' }) };
      return { ok: true, identity };
    } catch (err) {
      return fail(mapJoseError(err));
    }
  };
  return Object.assign(authenticate, { clearCache: () => jwtVerifier?.clearCache() });
}
