import type { Storage, TxWrite } from '../../storage/Storage.js';
import type { Identity } from '../../trpc/context.js';

const normalise = (email: string) => email.trim().toLowerCase();
const emailKey = (email: string) => `user:email:${normalise(email)}`;
const userKey = (sub: string) => `user:sub:${encodeURIComponent(sub)}`;

interface UserRecord {
  email: string;
}

/**
 * Remember which `sub` an email belongs to, so an administrator can name a user by email in the
 * auth namespace. The user's record and the email index are written in one transaction (a
 * changed email also drops the old index entry), so a lookup never sees one without the other.
 * Written when a user calls the user or auth namespace; last writer wins.
 */
export async function rememberUser(storage: Storage, identity: Identity): Promise<void> {
  if (!identity.email) return;
  const email = normalise(identity.email);
  const key = userKey(identity.sub);
  // The cheap read first: nearly every call finds everything in place.
  if ((await storage.get<UserRecord>(key))?.email === email && (await storage.get<string>(emailKey(email))) === identity.sub) return;
  const current = await storage.get<UserRecord>(key);
  const keys = [key, emailKey(email), ...(current && current.email !== email ? [emailKey(current.email)] : [])];
  await storage.transact(keys, (read) => {
    const record = read<UserRecord>(key);
    const writes: TxWrite[] = [
      { op: 'set', key, value: { email } satisfies UserRecord },
      { op: 'set', key: emailKey(email), value: identity.sub },
    ];
    // The old address stops naming this user, unless someone else has claimed it since.
    if (record && record.email !== email && keys.includes(emailKey(record.email)) && read<string>(emailKey(record.email)) === identity.sub) {
      writes.push({ op: 'delete', key: emailKey(record.email) });
    }
    return { writes, result: undefined };
  });
}

export function userByEmail(storage: Storage, email: string): Promise<string | undefined> {
  return storage.get<string>(emailKey(email));
}
