/**
 * A map for what is useless after `maxAgeMs` (a record re-read after a second, a "written in the
 * last 10 minutes" mark): `get` answers only for entries younger than that, and every `set` drops
 * the entries that aged out. A plain map cleared at a size ceiling holds up to the ceiling however
 * few entries still count, so under a steady stream of new users or keys it grew for hours before
 * its first clear (issue 37's soak); this one holds what arrived within `maxAgeMs`, and never more
 * than `capacity` (the oldest goes first).
 */
export class AgedMap<K, V> {
  /** Oldest write first: `set` moves a key to the end. */
  private readonly entries = new Map<K, { value: V; at: number }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly capacity: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The value written less than `maxAgeMs` before `now`, or undefined. */
  get(key: K, now: number): V | undefined {
    const hit = this.entries.get(key);
    return hit && now - hit.at < this.maxAgeMs ? hit.value : undefined;
  }

  set(key: K, value: V, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at: now });
    this.prune(now);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  private prune(now: number): void {
    // Oldest first, so the walk stops at the first entry that still counts: O(1) amortised per set.
    for (const [key, e] of this.entries) {
      if (now - e.at < this.maxAgeMs) return;
      this.entries.delete(key);
    }
  }
}
