import { CoreError, type Identity } from '@ai-backend/core';
import type { JWTPayload } from 'jose';
import { loadJose } from './loadJose.js';
import { identityFromClaims, type AdminRule } from './identityFromClaims.js';
import { inspectToken, MAX_TOKEN_LENGTH } from './inspectToken.js';
import { mapJoseError } from './mapJoseError.js';
import { VerifiedTokenCache } from './VerifiedTokenCache.js';

/** The only algorithm a shared secret verifies. One algorithm per key (RFC 8725 §3.1). */
export const JWT_ALGORITHMS = ['HS256'] as const;
/** Shortest shared secret accepted, in bytes (the HS256 output size). */
export const MIN_SECRET_BYTES = 32;

export interface JwtVerifierOptions {
  /** HS256 shared secret (config `jwt.secret`); at least 32 bytes. */
  secret: string | Uint8Array;
  /** Required `iss` value (config `jwt.issuer`). Unchecked when absent. */
  issuer?: string;
  /** Required `aud` value (config `jwt.audience`); an `aud` array must contain it. Unchecked when absent. */
  audience?: string;
  /** Allowed clock skew in seconds for exp, nbf and iat. Default 30. */
  clockToleranceSec?: number;
  /**
   * Accept tokens past their `exp`, and tokens without `exp` (config
   * `mcp.auth.jwt.allowExpiredTokens`). The signature and every other claim are still checked.
   * Default false.
   */
  allowExpiredTokens?: boolean;
  /** Scopes every token must carry (config `mcp.auth.jwt.requiredScopes`). Default none. */
  requiredScopes?: readonly string[];
  /** Who is an administrator (config `admin`). Default: nobody by name, scope 'mcp:admin'. */
  admin?: AdminRule;
  /**
   * How many recently verified tokens to remember (LRU, each for at most a minute and never
   * past its exp), so repeated requests with one token skip the signature check. 0 disables.
   * Default 1000.
   */
  cacheSize?: number;
}

/** Verifies one token; resolves to the caller's identity or rejects with a CoreError. */
export interface JwtVerifier {
  (token: string): Promise<Identity>;
  /**
   * The identity of a token this verifier already accepted and that is still valid, without
   * parsing it again; undefined otherwise. Lets the authenticator answer the common case (a
   * client resending its token) before any header inspection.
   */
  cached(token: string): Identity | undefined;
  /** Forget every verified token. */
  clearCache(): void;
}

/**
 * Build the HS256 verifier for the shared secret. The secret is imported into a CryptoKey once
 * here (jose would otherwise re-import a raw Uint8Array on every call); per token we keep
 * nothing. Failures reject with CoreError('INVALID_TOKEN', reason) or, for a valid token
 * lacking a required scope, CoreError('INSUFFICIENT_SCOPE') with details.requiredScopes.
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  // A private copy: the caller mutating its buffer later cannot change our key.
  const secret = new Uint8Array(typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret);
  if (secret.byteLength < MIN_SECRET_BYTES) {
    throw new TypeError(`jwt.secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  const tolerance = options.clockToleranceSec ?? 30;
  const allowExpired = options.allowExpiredTokens ?? false;
  const requiredScopes = [...(options.requiredScopes ?? [])];
  const admin = options.admin ?? { users: [], scope: 'mcp:admin' };
  const verifyOptions = {
    algorithms: [...JWT_ALGORITHMS],
    issuer: options.issuer,
    audience: options.audience,
    clockTolerance: tolerance,
    requiredClaims: allowExpired ? [] : ['exp'],
  };
  // Imported lazily (importKey is async) and shared by every call afterwards.
  let key: Promise<CryptoKey> | undefined;
  const cacheSize = options.cacheSize ?? 1000;
  const cache = cacheSize > 0 ? new VerifiedTokenCache(cacheSize) : undefined;
  const getKey = () => (key ??= globalThis.crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']));

  // Hash only what the length cap lets through; a hit is a token that passed every check.
  const keyOf = (token: string) => (cache && token.length <= MAX_TOKEN_LENGTH ? VerifiedTokenCache.keyOf(token) : undefined);
  // The cache's own lookup (it hashes the token and applies the length cap itself).
  const cached: (token: string) => Identity | undefined = cache ? cache.lookup.bind(cache) : () => undefined;

  const verify = async (token: string): Promise<Identity> => {
    const cacheKey = keyOf(token);
    const hit = cacheKey === undefined ? undefined : cache?.get(cacheKey);
    if (hit) return hit;

    const header = inspectToken(token);
    if (!(JWT_ALGORITHMS as readonly string[]).includes(header.alg)) {
      throw new CoreError('INVALID_TOKEN', 'algorithm not allowed');
    }
    let payload: JWTPayload;
    const jose = await loadJose();
    try {
      ({ payload } = await jose.jwtVerify(token, await getKey(), verifyOptions));
    } catch (err) {
      // jose checks exp last, after the signature and every other claim, so the payload it
      // carries on JWTExpired is otherwise fully verified.
      if (allowExpired && err instanceof jose.errors.JWTExpired) payload = err.payload;
      else throw mapJoseError(err);
    }
    // jose only checks iat against the clock when maxTokenAge is set; a token "issued" in the
    // future is a forged or mis-clocked one either way.
    if (typeof payload.iat === 'number' && payload.iat > Math.floor(Date.now() / 1000) + tolerance) {
      throw new CoreError('INVALID_TOKEN', 'token issued in the future');
    }
    const identity = identityFromClaims(payload, admin, 'jwt');
    if (!requiredScopes.every((s) => identity.scopes.includes(s))) {
      throw new CoreError('INSUFFICIENT_SCOPE', 'insufficient scope', { details: { requiredScopes } });
    }
    if (cacheKey !== undefined) {
      // Valid while now < exp + tolerance, the same bound jose applies.
      const validUntil = allowExpired || typeof payload.exp !== 'number' ? Infinity : (payload.exp + tolerance) * 1000;
      cache?.set(cacheKey, identity, validUntil);
    }
    return identity;
  };
  return Object.assign(verify, { cached, clearCache: () => cache?.clear() });
}
