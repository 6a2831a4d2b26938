import { CoreError } from '../../kernel/CoreError.js';
import type { Storage } from '../../kernel/Storage.js';
import { userByEmail } from '../../services/directory/userIndex.js';
import type { Identity } from '../../kernel/identity.js';

/**
 * The user id whose keys an auth.* call may touch. The `email` input must name the caller
 * (its email, case-insensitive, or its sub); only an administrator may name someone else, by
 * email (looked up among users seen before) or by sub. Everyone else gets FORBIDDEN: the
 * reference implementation let anyone read and replace anyone's key this way.
 */
export async function resolveKeyOwner(ctx: { storage: Storage }, identity: Identity, email: string): Promise<string> {
  const named = email.trim();
  if (named === identity.sub || (identity.email !== undefined && named.toLowerCase() === identity.email.toLowerCase())) {
    return identity.sub;
  }
  if (!identity.isAdmin) throw new CoreError('FORBIDDEN', 'you can only manage your own keys');
  return (await userByEmail(ctx.storage, named)) ?? named;
}
