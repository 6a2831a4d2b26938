import {
  CoreError,
  mcpResourceUrl,
  publicBaseUrl,
  type AuthFacts,
  type Authenticator,
  type Identity,
  type Logger,
  type ResolvedConfig,
} from '@ai-backend/core/internal';
import { createJwtVerifier, JWT_ALGORITHMS, type JwtVerifier } from './createJwtVerifier.js';
import { isAdminIdentity } from './identityFromClaims.js';
import { inspectToken } from './inspectToken.js';
import { mapJoseError } from './mapJoseError.js';

/**
 * Verifies an access token issued by our own OAuth authorization server. Resolves to the
 * identity, or to null when the token is not valid (unknown key, bad signature, wrong
 * audience...); may also reject with a CoreError (its reason is passed on) or a jose error.
 * `resource` is the /mcp URL of the server as the request addressed it: the token's audience
 * must be that (absent when the token came without a request).
 */
export type OAuthTokenVerifier = (token: string, opts?: { resource?: string }) => Promise<Identity | null>;

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
 * Which verifiers apply is `config.auth.verifiers`, decided once when the config was resolved
 * (config/resolveAuth.ts, from `mcp.auth.authType`, the `enabled` flags of `mcp.auth.jwt` and
 * `mcp.auth.oauth`, `jwt.secret` and whether the OAuth server runs): the shared-secret JWT verifier
 * for 'jwt', the OAuth verifier (when one is passed) for 'oauth', both for 'jwt+oauth', none for
 * 'none'. A token goes to exactly one verifier, chosen by its header `alg` from explicit
 * allow-lists; keys are never taken from the token. With authType 'none' a presented token is
 * still verified, and refused when nothing can verify it.
 *
 * Never rejects: failures resolve to `{ ok: false, error }` with a CoreError
 * (INVALID_TOKEN, or INSUFFICIENT_SCOPE for a valid token lacking a required scope).
 */
/** A token verifier whose cache of verified tokens can be emptied (admin.clearCache). */
export type ClearableAuthenticator = Authenticator & { clearCache(): void };

export function createAuthenticator(config: ResolvedConfig, opts: CreateAuthenticatorOptions = {}): ClearableAuthenticator {
  const { mode, verifiers } = config.auth;
  const jwtCfg = config.mcp.auth.jwt;

  const routes = new Map<string, Route>();
  let jwtVerifier: JwtVerifier | undefined;
  const routeJwt = (secret: string | undefined) => {
    // The union says 'jwt' only with a secret; the check keeps the type honest.
    if (secret === undefined) throw new TypeError("config.auth.verifiers accepts 'jwt' but jwt.secret is not set");
    const verify = (jwtVerifier = createJwtVerifier({
      secret,
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      clockToleranceSec: config.jwt.clockToleranceSec,
      allowExpiredTokens: jwtCfg.allowExpiredTokens,
      requiredScopes: jwtCfg.requiredScopes,
      admin: config.admin,
    }));
    for (const alg of JWT_ALGORITHMS) routes.set(alg, { kind: 'jwt', verify });
  };
  const routeOAuth = (verify: OAuthTokenVerifier | undefined) => {
    if (!verify) return; // a library caller without our authorization server: its tokens are refused
    for (const alg of opts.oauthAlgorithms ?? DEFAULT_OAUTH_ALGORITHMS) {
      if (/^(hs|none$)/i.test(alg)) throw new TypeError(`oauthAlgorithms must be asymmetric algorithms, got "${alg}"`);
      routes.set(alg, { kind: 'oauth', verify });
    }
  };
  switch (verifiers) {
    case 'jwt':
      routeJwt(config.jwt.secret);
      break;
    case 'oauth':
      routeOAuth(opts.oauthVerifier);
      break;
    case 'jwt+oauth':
      routeJwt(config.jwt.secret);
      routeOAuth(opts.oauthVerifier);
      break;
    case 'none':
      break;
  }

  const nothingConfigured =
    mode === 'none'
      ? "bearer tokens cannot be verified: authType is 'none' and no verifier is configured (set jwt.secret)"
      : 'bearer tokens cannot be verified: no token verifier is configured';

  const fail = (error: CoreError) => ({ ok: false as const, error });

  /** The /mcp URL the request addressed (publicUrl, else its host; forwarded headers with trustProxy). */
  const resourceOf = (facts: AuthFacts | undefined) =>
    facts?.request && mcpResourceUrl(publicBaseUrl(facts.request.url, facts.request.headers, config));

  const authenticate: Authenticator = async (token, facts) => {
    // A token already verified (clients resend the same one) skips parsing altogether.
    const known = jwtVerifier?.cached(token);
    if (known) return { ok: true, identity: known };
    try {
      const header = inspectToken(token);
      if (routes.size === 0) return fail(new CoreError('INVALID_TOKEN', nothingConfigured));
      const route = routes.get(header.alg);
      if (!route) return fail(new CoreError('INVALID_TOKEN', 'algorithm not allowed'));
      if (route.kind === 'jwt') return { ok: true, identity: await route.verify(token) };

      const found = await route.verify(token, { resource: resourceOf(facts) });
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
