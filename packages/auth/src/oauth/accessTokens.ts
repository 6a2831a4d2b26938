import { CoreError, type Identity } from '@ai-backend/core';
import { jwtVerify, SignJWT, type JWTHeaderParameters } from 'jose';
import { isAdminIdentity } from '../jwt/identityFromClaims.js';
import { mapJoseError } from '../jwt/mapJoseError.js';
import { mcpResourceUrl } from './challenge.js';
import { randomToken, sha256 } from './crypto.js';
import type { OAuthSettings } from './oauthSettings.js';
import type { SessionRecord } from './records.js';
import type { SessionStore } from './sessionStore.js';
import type { SigningKeys } from './signingKeys.js';

/** The algorithms our own access tokens may carry: the two we can sign with, nothing else. */
export const ACCESS_TOKEN_ALGORITHMS = ['ES256', 'RS256'];
const CLOCK_TOLERANCE_SEC = 30;
const CACHE_LIMIT = 10_000;

/** The claims we rely on, once verified. */
interface Claims {
  sub: string;
  sid: string;
  clientId: string;
  scope: string;
  exp: number;
  aud: string;
}

export interface VerifyAccessTokenOptions {
  /** The resource the request came to (our /mcp URL as the client sees it); checked against `aud`. */
  resource?: string;
}

/**
 * Our access tokens (RFC 9068 JWT profile): signed with our own key, `aud` = the /mcp URL,
 * `sid` binding the token to a session that must still exist. Removing the session (refresh
 * token reuse, sign-out) or changing the encryption key revokes its access tokens.
 */
export class AccessTokens {
  /** sid → until when the session is known to exist (ms). Bounded; oldest evicted first. */
  private readonly seen = new Map<string, { until: number; session: SessionRecord }>();
  /**
   * Sessions revoked since this process started (by the signal), bounded; oldest dropped first.
   * A verification that read the session before its revocation must not cache it afterwards: it
   * would be accepted on this instance for sessionCacheMs more. A session id is never used again.
   */
  private readonly revoked = new Set<string>();
  /**
   * sha256(token) → claims of a token whose signature and claims were checked. A signature
   * check (ES256) costs ~0.2 ms; a hit costs a hash. Entries die with the token's exp.
   */
  private readonly verified = new Map<string, Claims>();

  constructor(
    private readonly keys: SigningKeys,
    private readonly store: SessionStore,
    private readonly settings: OAuthSettings,
  ) {}

  async issue(session: SessionRecord, scopes: string[]): Promise<{ token: string; expiresIn: number }> {
    const { kid, alg, key } = await this.keys.signingKey();
    const expiresIn = this.settings.accessTokenTtlSec;
    const token = await new SignJWT({
      client_id: session.clientId,
      scope: scopes.join(' '),
      sid: session.sid,
      ...(session.email ? { email: session.email, email_verified: session.emailVerified === true } : {}),
    })
      .setProtectedHeader({ alg, kid, typ: 'at+jwt' })
      .setIssuer(session.issuer)
      .setAudience(session.resource)
      .setSubject(session.sub)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + expiresIn)
      .setJti(randomToken(16))
      .sign(key);
    return { token, expiresIn };
  }

  /** Verify one of our access tokens; throws CoreError (INVALID_TOKEN or SESSION_NOT_FOUND). */
  async verify(token: string, opts: VerifyAccessTokenOptions = {}): Promise<{ identity: Identity; session: SessionRecord }> {
    const base = this.settings.publicUrl?.replace(/\/+$/, '');
    const expectedAud = base ? mcpResourceUrl(base) : opts.resource;
    const payload = await this.verifiedClaims(token, base, expectedAud);
    const session = await this.session(payload.sid);
    if (session.sub !== payload.sub || session.clientId !== payload.clientId) throw new CoreError('SESSION_NOT_FOUND', 'session not found');

    const scopes = payload.scope.split(' ').filter(Boolean);
    const identity: Identity = {
      sub: session.sub,
      scopes,
      isAdmin: false,
      via: 'oauth',
      clientId: session.clientId,
      sessionId: session.sid,
    };
    if (session.email) {
      identity.email = session.email;
      identity.emailVerified = session.emailVerified === true;
    }
    // Evaluated on every request from the current admin.users: a removed administrator loses
    // admin rights at once, whatever scope the token carries.
    identity.isAdmin = isAdminIdentity(this.settings.admin, identity);
    return { identity, session };
  }

  /** Signature and claim checks, remembered per token until it expires. */
  private async verifiedClaims(token: string, base: string | undefined, expectedAud: string | undefined): Promise<Claims> {
    const id = sha256(token);
    const now = Date.now();
    const hit = this.verified.get(id);
    if (hit) {
      if ((hit.exp + CLOCK_TOLERANCE_SEC) * 1000 > now && (expectedAud === undefined || hit.aud === expectedAud)) return hit;
      if ((hit.exp + CLOCK_TOLERANCE_SEC) * 1000 <= now) this.verified.delete(id);
    }
    let payload;
    try {
      ({ payload } = await jwtVerify(token, (header: JWTHeaderParameters) => this.keyFor(header), {
        algorithms: ACCESS_TOKEN_ALGORITHMS,
        typ: 'at+jwt',
        requiredClaims: ['exp', 'iat', 'sub', 'sid', 'client_id', 'iss', 'aud'],
        clockTolerance: CLOCK_TOLERANCE_SEC,
        ...(base ? { issuer: base } : {}),
        ...(expectedAud ? { audience: expectedAud } : {}),
      }));
    } catch (err) {
      throw mapJoseError(err);
    }
    // Without a configured public URL the issuer follows the request's host; the signature
    // proves we minted the token, and we only ever mint aud = <iss>/mcp.
    if (typeof payload.iss !== 'string' || payload.aud !== mcpResourceUrl(payload.iss)) {
      throw new CoreError('INVALID_TOKEN', 'audience mismatch');
    }
    const { sub, sid, client_id: clientId, scope, exp } = payload;
    if (
      typeof sub !== 'string' ||
      typeof sid !== 'string' ||
      typeof clientId !== 'string' ||
      typeof scope !== 'string' ||
      typeof exp !== 'number'
    ) {
      throw new CoreError('INVALID_TOKEN', 'malformed token');
    }
    const claims: Claims = { sub, sid, clientId, scope, exp, aud: payload.aud };
    if (this.verified.size >= CACHE_LIMIT) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(id, claims);
    return claims;
  }

  /** Drop a session from the cache (it was revoked here). */
  forget(sid: string): void {
    this.seen.delete(sid);
    if (this.revoked.size >= CACHE_LIMIT) this.revoked.delete(this.revoked.values().next().value!);
    this.revoked.add(sid);
  }

  private async keyFor(header: JWTHeaderParameters) {
    // Keys come only from our own set, by kid; embedded jwk/jku/x5u are never looked at.
    const found = typeof header.kid === 'string' && header.kid.length <= 128 ? await this.keys.verificationKey(header.kid) : undefined;
    if (!found || found.alg !== header.alg) throw new CoreError('INVALID_TOKEN', 'unknown signing key');
    return found.key;
  }

  private async session(sid: string): Promise<SessionRecord> {
    const now = Date.now();
    const cached = this.seen.get(sid);
    if (cached && cached.until > now && cached.session.exp > now) return cached.session;
    const session = await this.store.get<SessionRecord>('session', sid);
    // Absent, expired, or sealed under another encryption key: all read as not found. Revoked while
    // it was read: not found either, and not cached.
    if (!session || this.revoked.has(sid)) {
      this.seen.delete(sid);
      throw new CoreError('SESSION_NOT_FOUND', 'session not found');
    }
    if (this.settings.sessionCacheMs > 0) {
      if (this.seen.size >= CACHE_LIMIT) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(sid, { until: now + this.settings.sessionCacheMs, session });
    }
    return session;
  }
}
