/**
 * Stored state (keys, balances, workspaces, MCP sessions, rate-limit buckets, the e-mail index)
 * is keyed by `Identity.sub`. With `authType: 'both'` two issuers hand out subjects, so the two
 * namespaces are kept apart here:
 *
 * - identity-provider subjects (our OAuth server's sign-ins) become `idp:<issuer>#<sub>`; an
 *   issuer URL never contains `#`, so the first `#` separates the two parts;
 * - shared-secret JWT subjects stay as they are (backward compatible), except the rare subject
 *   that itself starts with a reserved prefix (`idp:` or `jwt:`), which becomes `jwt:<sub>`.
 *
 * The two ranges cannot meet: a JWT identity never starts with `idp:`, an identity-provider one
 * always does, and each mapping is one-to-one.
 */
export const IDP_SUBJECT_PREFIX = 'idp:';
const JWT_ESCAPE_PREFIX = 'jwt:';

/** The stored id of a user signed in at an identity provider. */
export function idpSubject(issuer: string, sub: string): string {
  return `${IDP_SUBJECT_PREFIX}${issuer}#${sub}`;
}

/** The stored id of a shared-secret JWT subject: unchanged unless it could pass for a qualified id. */
export function jwtSubject(sub: string): string {
  return sub.startsWith(IDP_SUBJECT_PREFIX) || sub.startsWith(JWT_ESCAPE_PREFIX) ? `${JWT_ESCAPE_PREFIX}${sub}` : sub;
}

/**
 * OIDC `email_verified`: only boolean true or the string "true" (some userinfo endpoints send
 * strings) count; a missing claim, false, "false" or anything else is unverified.
 */
export function isEmailVerified(claim: unknown): boolean {
  return claim === true || claim === 'true';
}
