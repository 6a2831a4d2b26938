import { CoreError, type Identity } from '@ai-backend/core';

/** Who counts as an administrator (config `admin`). */
export interface AdminRule {
  /** Subjects or e-mail addresses (e-mail compared case-insensitively). */
  users: readonly string[];
  /** A scope that makes its holder an administrator, e.g. 'mcp:admin'. */
  scope: string;
}

/** The administrator rule, shared by JWT and OAuth identities so both modes agree. */
export function isAdminIdentity(rule: AdminRule, who: { sub: string; email?: string; scopes: readonly string[] }): boolean {
  if (rule.users.includes(who.sub)) return true;
  if (who.email !== undefined) {
    const email = who.email.toLowerCase();
    if (rule.users.some((u) => u.toLowerCase() === email)) return true;
  }
  return who.scopes.includes(rule.scope);
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
  if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 512) invalid('invalid sub claim');
  if (claims.email !== undefined && typeof claims.email !== 'string') invalid('invalid email claim');
  const sub = claims.sub;
  const email = claims.email as string | undefined;
  const scopes = readScopes(claims);
  const identity: Identity = { sub, scopes, isAdmin: isAdminIdentity(admin, { sub, email, scopes }), via };
  if (email !== undefined) identity.email = email;
  return identity;
}
