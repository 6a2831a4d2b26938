import type { Storage } from '../../kernel/Storage.js';

/**
 * Count `units` in the fixed window (aligned to the epoch) that `now` falls in: one atomic
 * `increment` per check, keyed `<key>:<window number>`, with a ttl of one window (from the key's
 * creation, so it always outlives its window): the provider key-check budget's rule, one store
 * request per check (rare, and failing closed). The rate limiter counts the same keys in leases
 * (WindowLeases). Throws what the store throws; callers decide fail-open or closed.
 */
export async function countInWindow(
  storage: Pick<Storage, 'increment'>,
  key: string,
  windowMs: number,
  units = 1,
  now = Date.now(),
): Promise<{ count: number; resetSec: number }> {
  const { window, resetSec } = windowAt(now, windowMs);
  const count = (await storage.increment(`${key}:${window}`, units, { ttlMs: windowMs })) ?? 0;
  return { count, resetSec };
}

/** The number of the fixed window (aligned to the epoch) `now` falls in, and the seconds until it ends (at least 1). */
export function windowAt(now: number, windowMs: number): { window: number; resetSec: number } {
  const window = Math.floor(now / windowMs);
  return { window, resetSec: Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000)) };
}
