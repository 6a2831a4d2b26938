/**
 * A bounded map that keeps the keys in use: past `capacity`, an eighth of it goes at once, oldest
 * first, passing over (and clearing the mark of) keys read or written since the last pass (the
 * "second chance" way of approximating least-recently-used).
 *
 * Why not the usual Map LRU (delete the key and set it again on every use, so the oldest is
 * first): a Map keeps a deleted entry in its bucket's chain until it next rehashes, which a map
 * holding thousands of keys does rarely, so a hot key deleted and set on every request made its
 * own lookups walk thousands of dead entries: 80 µs a touch at 10,000 keys on Node 24
 * (bench/txValueCacheAB.mjs). Here an entry changes in place and only evictions delete.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, { value: V; used: boolean }>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The value, the key marked in use. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    entry.used = true;
    return entry.value;
  }

  set(key: K, value: V): void {
    const entry = this.entries.get(key);
    if (entry) {
      entry.value = value;
      entry.used = true;
      return;
    }
    this.entries.set(key, { value, used: false });
    if (this.entries.size > this.capacity) this.evict(key);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** `added`, the key whose set overflowed the map, is never the one to go. */
  private evict(added: K): void {
    let n = this.entries.size - this.capacity + (this.capacity >> 3);
    for (const [key, entry] of this.entries) {
      if (n <= 0) return;
      if (entry.used || key === added) entry.used = false;
      else {
        this.entries.delete(key);
        n--;
      }
    }
    // Every key was in use: the oldest go anyway.
    for (const key of this.entries.keys()) {
      if (n <= 0) return;
      if (key !== added) {
        this.entries.delete(key);
        n--;
      }
    }
  }
}
