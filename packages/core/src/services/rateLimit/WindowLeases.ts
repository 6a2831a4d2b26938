import type { Storage } from '../../kernel/Storage.js';

/** A lease is at most this share of the room left under the limit when it is taken (1/8). */
const LEASE_SHARE = 8;
/** Most units one lease takes ahead of use. */
const MAX_LEASE = 64;
/** Below this much room every hit is counted in the store one by one (exact near the limit). */
const MIN_ROOM = 16;
/** Default bound on the counters a process remembers (docs/security.md#rate-limits-mcpratelimiting). */
const MAX_ENTRIES = 10_000;

/** What this process knows of one window counter. */
interface Lease {
  /** The counter's value in the store as this process last saw it (all instances' hits and leases). */
  seen: number;
  /** Units this process took from the counter ahead of use and has not used yet. */
  unused: number;
  /** Units this process has added to the counter (counted when sent, given-back units when they land). */
  own: number;
  /** The counter moved by more than this process added: another instance counts this caller too. */
  shared: boolean;
  /** An increment of this process has been answered (`seen` is a reading, not a guess). */
  known: boolean;
  /** A lease of this process is on its way: concurrent hits count only themselves meanwhile. */
  leasing: boolean;
}

/** What a hit counted: whether it fits the limit, and the window's count as this process sees it. */
export interface LeasedCount {
  allowed: boolean;
  /** Units counted in the window, less the ones this process holds unused. */
  used: number;
}

/**
 * Fixed-window counters in the shared store, taken in leases: a hot caller's hit usually spends a
 * unit this process already counted in the store, so it makes no store request (on PostgreSQL,
 * Redis or SQLite a counter's increment is a round trip or a write per hit otherwise). The first
 * hit of a window counts only itself; later ones, while the room left under the limit is at least
 * 16, count up to 1/8 of that room (at most 64) ahead. A lease never admits past the limit: the
 * store's counter always includes every unit leased, and units leased past the limit are given
 * back at once. Leases are taken only while this process is the counter's one writer: once the
 * counter holds more than this process added (another instance counts the same caller), every
 * later hit of the window is counted in the store one by one, as without leases; and one lease at
 * a time per counter. So one instance is exact (a hit its lease does not cover that the store
 * refuses is served from units its concurrent hits leased, if they have them), and across
 * instances a caller can be refused early by at most the lease another instance holds (one at a
 * time, at most 1/8 of the room when taken, at most 64), never late.
 * Remembers at most `maxEntries` counters (old windows are dropped first): forgetting one only
 * wastes its unused units.
 */
export class WindowLeases {
  private readonly leases = new Map<string, Lease & { window: number }>();

  constructor(private readonly maxEntries = MAX_ENTRIES) {}

  /** How many counters are remembered (for tests and sizing). */
  get size(): number {
    return this.leases.size;
  }

  /**
   * Count `units` against `limit` in window number `window` of counter `key` (the store key is
   * `<key>:<window>`, with a ttl of one window). Throws what the store throws.
   */
  async count(
    storage: Pick<Storage, 'increment'>,
    key: string,
    window: number,
    windowMs: number,
    units: number,
    limit: number,
  ): Promise<LeasedCount> {
    const id = `${key}:${window}`;
    const lease = this.remember(id, window);
    if (lease.unused >= units) {
      lease.unused -= units;
      return { allowed: true, used: lease.seen - lease.unused };
    }
    // What is left of the lease goes into this hit; the rest of it is counted in the store now.
    const fromLease = lease.unused;
    lease.unused = 0;
    const need = units - fromLease;
    // A lease only on a counter this process has read, writes alone, and is not leasing already.
    const room = lease.known && !lease.shared && !lease.leasing ? limit - lease.seen : 0;
    const ahead = room >= MIN_ROOM ? Math.min(MAX_LEASE, Math.floor(room / LEASE_SHARE)) : 0;
    // Counted as ours before it is sent, so a concurrent hit of this process that reads the
    // counter first never mistakes it for another instance's.
    lease.own += need + ahead;
    lease.leasing ||= ahead > 0;
    let seen: number;
    try {
      seen = (await storage.increment(id, need + ahead, { ttlMs: windowMs })) ?? 0;
    } catch (err) {
      lease.unused += fromLease;
      throw err;
    } finally {
      if (ahead > 0) lease.leasing = false;
    }
    lease.known = true;
    if (seen > lease.own) lease.shared = true;
    // Units past the limit among those just added go back: the lease's first. The hit fits when
    // the count without its lease does, or when leases of this process's concurrent hits hold
    // enough for it (then its own units go back too, and it spends theirs).
    const leaseBack = Math.min(ahead, Math.max(0, seen - limit));
    let allowed = seen - ahead <= limit;
    let back = leaseBack;
    if (!allowed && lease.unused >= need) {
      lease.unused -= need;
      back += need;
      allowed = true;
    }
    // Given back without waiting: until it lands the count is only higher, never lower.
    if (back > 0)
      storage.increment(id, -back).then(
        () => (lease.own -= back),
        () => undefined,
      );
    lease.seen = Math.max(lease.seen, seen - back);
    lease.unused += ahead - leaseBack;
    return { allowed, used: lease.seen - lease.unused };
  }

  private remember(id: string, window: number): Lease {
    const known = this.leases.get(id);
    if (known) return known;
    // Counters are remembered in the order they were first hit, so past windows come first.
    for (const [k, lease] of this.leases) {
      if (lease.window >= window && this.leases.size < this.maxEntries) break;
      this.leases.delete(k);
    }
    const lease = { seen: 0, unused: 0, own: 0, shared: false, known: false, leasing: false, window };
    this.leases.set(id, lease);
    return lease;
  }
}

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
