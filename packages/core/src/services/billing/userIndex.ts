import type { Storage } from '../../storage/Storage.js';
import type { Identity } from '../../trpc/context.js';

const emailKey = (email: string) => `user:email:${email.trim().toLowerCase()}`;

/**
 * Remember which `sub` an email belongs to, so an administrator can name a user by email in
 * the auth namespace. Written when a user calls the user or auth namespace; last writer wins.
 */
export async function rememberUser(storage: Storage, identity: Identity): Promise<void> {
  if (!identity.email) return;
  const key = emailKey(identity.email);
  if ((await storage.get<string>(key)) !== identity.sub) await storage.set(key, identity.sub);
}

export function userByEmail(storage: Storage, email: string): Promise<string | undefined> {
  return storage.get<string>(emailKey(email));
}
