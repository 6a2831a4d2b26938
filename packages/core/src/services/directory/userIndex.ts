import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';

const emailKey = (email: string) => `user:email:${email.trim().toLowerCase()}`;

/** What `rememberUser` did: only `claimed` wrote anything. */
export type RememberOutcome = 'claimed' | 'already' | 'unverified' | 'conflict' | 'no-email';

/**
 * Remember which user id an e-mail belongs to, so an administrator can name a user by e-mail
 * in the auth namespace. Written when a user calls the user or auth namespace. Only an e-mail
 * its issuer verified may claim an entry, and the first claim stands: a later identity
 * presenting the same address is refused (`conflict`), never written over the owner, so a
 * token carrying someone else's address cannot redirect an administrator's key operations.
 */
export async function rememberUser(storage: Storage, identity: Identity, logger?: Pick<Logger, 'warn'>): Promise<RememberOutcome> {
  const outcome = await claim(storage, identity);
  if (outcome === 'conflict') logger?.warn('e-mail index claim refused: the address belongs to another user', { sub: identity.sub });
  return outcome;
}

async function claim(storage: Storage, identity: Identity): Promise<RememberOutcome> {
  if (!identity.email) return 'no-email';
  if (identity.emailVerified !== true) return 'unverified';
  const key = emailKey(identity.email);
  const owner = await storage.get<string>(key);
  if (owner === identity.sub) return 'already';
  if (owner !== undefined) return 'conflict';
  // Set-if-absent: of two first claims at once, one wins and the other reads as a conflict.
  if (await storage.compareAndSet<string>(key, undefined, identity.sub)) return 'claimed';
  return (await storage.get<string>(key)) === identity.sub ? 'already' : 'conflict';
}

export function userByEmail(storage: Storage, email: string): Promise<string | undefined> {
  return storage.get<string>(emailKey(email));
}
