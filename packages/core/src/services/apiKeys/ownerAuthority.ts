import type { ResolvedConfig } from '../../config/schema.js';

/** What the store knows of a key's owner that the administrator listing may name: their e-mail, and whether its issuer vouched for it. */
export interface OwnerFacts {
  email?: string | undefined;
  emailVerified?: boolean | undefined;
}

/**
 * Is a key's owner an administrator by today's `admin.users`: their stored id, or an e-mail their
 * issuer marked verified (as the auth layer decides for tokens)? The only source of a key's
 * administrator power, asked at every call (ApiKeyVerifier) and when the admin scope is given
 * (ApiKeyService). An admin scope a token carried is not enough: a key has no expiry tied to
 * that token, so it would outlive the authority it was minted under.
 */
export function ownerListedAdmin(config: ResolvedConfig, sub: string, owner: OwnerFacts | undefined): boolean {
  const users = config.admin.users;
  if (users.includes(sub)) return true;
  if (owner?.email === undefined || owner.emailVerified !== true) return false;
  const email = owner.email.toLowerCase();
  return users.some((u) => u.toLowerCase() === email);
}

/** Whether any administrator is listed by e-mail (only then does a key's owner profile need reading). */
export function listsAdminsByEmail(config: ResolvedConfig): boolean {
  return config.admin.users.some((u) => u.includes('@'));
}
