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
 * back at once. One instance is exact; across instances a caller can be refused early by the
 * units other instances hold unused (each lease at most 1/8 of the room when taken), never late.
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
    const held = this.leases.get(id);
    if (held && held.unused >= units) {
      held.unused -= units;
      return { allowed: true, used: held.seen - held.unused };
    }
    // What is left of the lease goes into this hit; the rest of it is counted in the store now.
    const fromLease = held?.unused ?? 0;
    if (held) held.unused = 0;
    const room = held ? limit - held.seen : 0;
    const ahead = room >= MIN_ROOM ? Math.min(MAX_LEASE, Math.floor(room / LEASE_SHARE)) : 0;
    const seen = (await storage.increment(id, units - fromLease + ahead, { ttlMs: windowMs })) ?? 0;
    // The hit fits when the count without its lease does; what of the lease lies past the limit
    // is given back (without waiting: until it lands the count is only higher, never lower).
    const allowed = seen - ahead <= limit;
    const back = Math.min(ahead, Math.max(0, seen - limit));
    if (back > 0) storage.increment(id, -back).catch(() => undefined);
    const lease = this.remember(id, window);
    lease.seen = Math.max(lease.seen, seen - back);
    lease.unused += ahead - back;
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
    const lease = { seen: 0, unused: 0, window };
    this.leases.set(id, lease);
    return lease;
  }
}
