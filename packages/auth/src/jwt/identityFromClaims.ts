import { CoreError, isEmailVerified, isUnicodeText, jwtSubject, type Identity } from '@ai-backend/core/internal';

/** Who counts as an administrator (config `admin`). */
export interface AdminRule {
  /**
   * Stored subject ids (a JWT subject as is, an identity-provider user as
   * `idp:<issuer>#<sub>`) or e-mail addresses (compared case-insensitively, verified e-mails only).
   */
  users: readonly string[];
  /** A scope that makes the holder of a shared-secret JWT an administrator, e.g. 'mcp:admin'. */
  scope: string;
}

/**
 * Is this identity listed in `admin.users`? By its stored (issuer-qualified) subject, or by an
 * e-mail its issuer marked verified: an unverified address proves nothing about who holds it.
 */
export function isListedAdmin(rule: AdminRule, who: { sub: string; email?: string; emailVerified?: boolean }): boolean {
  if (rule.users.includes(who.sub)) return true;
  if (who.email !== undefined && who.emailVerified === true) {
    const email = who.email.toLowerCase();
    if (rule.users.some((u) => u.toLowerCase() === email)) return true;
  }
  return false;
}

/**
 * The administrator rule, shared by JWT and OAuth identities so both modes agree. The admin
 * scope counts only on shared-secret JWTs (the operator's own signer grants it); our OAuth
 * server grants it only to listed administrators, and the listing is checked again on every
 * request, so removing a user from `admin.users` takes effect at once.
 */
export function isAdminIdentity(
  rule: AdminRule,
  who: { sub: string; email?: string; emailVerified?: boolean; scopes: readonly string[]; via?: Identity['via'] },
): boolean {
  if (isListedAdmin(rule, who)) return true;
  return who.via !== 'oauth' && who.scopes.includes(rule.scope);
}

function invalid(reason: string): never {
  throw new CoreError('INVALID_TOKEN', reason);
}

/**
 * Scopes from either the spec's `scopes` array claim or the OAuth-style space-separated
 * `scope` string (RFC 9068); both are read and merged. A claim of the wrong type is refused
 * instead of ignored, so a token never means something different from what its issuer wrote.
 */
export function readScopes(claims: Record<string, unknown>): string[] {
  const out = new Set<string>();
  if (claims.scopes !== undefined) {
    if (!Array.isArray(claims.scopes) || claims.scopes.some((s) => typeof s !== 'string')) invalid('invalid scopes claim');
    for (const s of claims.scopes as string[]) if (s) out.add(s);
  }
  if (claims.scope !== undefined) {
    if (typeof claims.scope !== 'string') invalid('invalid scope claim');
    for (const s of claims.scope.split(' ')) if (s) out.add(s);
  }
  return [...out];
}

/** Build an Identity from verified JWT claims; sub is required and must be a non-empty string. */
export function identityFromClaims(claims: Record<string, unknown>, admin: AdminRule, via: Identity['via']): Identity {
  if (claims.sub === undefined) invalid('missing sub claim');
  // Not Unicode text (an unpaired surrogate): no per-user storage key can be built from it.
  if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 512 || !isUnicodeText(claims.sub))
    invalid('invalid sub claim');
  if (claims.email !== undefined && (typeof claims.email !== 'string' || !isUnicodeText(claims.email))) invalid('invalid email claim');
  const sub = via === 'jwt' ? jwtSubject(claims.sub) : claims.sub;
  const email = claims.email as string | undefined;
  const emailVerified = email !== undefined && isEmailVerified(claims.email_verified);
  const scopes = readScopes(claims);
  const identity: Identity = { sub, scopes, isAdmin: isAdminIdentity(admin, { sub, email, emailVerified, scopes, via }), via };
  if (email !== undefined) {
    identity.email = email;
    identity.emailVerified = emailVerified;
  }
  return identity;
}
