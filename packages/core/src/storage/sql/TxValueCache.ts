/** A cached raw row: the stored text and its row version, or `undefined` for a key known to be absent. */
export interface CachedRow {
  value: string | undefined;
  /** The row version (PostgreSQL `xmin`) the value was read or written at; undefined when absent. */
  version: string | undefined;
}

interface Cached extends CachedRow {
  /** ms; the row stops counting from then on (as the store's own `expires_at`). */
  expiresAt: number | undefined;
  /** ms; when this process learnt it (guesses older than `maxAgeMs` are not used). */
  at: number;
  /** Used since the last eviction passed it (evict). */
  used: boolean;
}

const ABSENT: CachedRow = { value: undefined, version: undefined };

/**
 * What this process last read or committed for each recently used key, as the guess an
 * optimistic transaction plans against instead of reading first. Never trusted on its own: the
 * transaction checks, under the keys' locks, that each row still has the version this guess
 * carries, and a miss falls back to a fresh read. Bounded (a key not used lately goes first), and
 * a guess older than `maxAgeMs` is not used, so a 32-bit row version can never have wrapped
 * around to the same number behind it.
 *
 * Entries are updated in place, never deleted and set again to move them to the end: a Map keeps a
 * deleted entry in its bucket's chain until it next rehashes, so a hot key deleted and set again on
 * every call (a user's account) made its own lookups walk thousands of dead entries (bench/txValueCacheAB.mjs).
 */
export class TxValueCache {
  private readonly rows = new Map<string, Cached>();

  constructor(
    private readonly capacity = 10_000,
    private readonly maxAgeMs = 10 * 60_000,
  ) {}

  /** The guess for `key` at `now`: the cached row, or absent (absent, expired, too old or unknown). A copy: the entry changes in place. */
  guess(key: string, now: number): CachedRow {
    const hit = this.rows.get(key);
    if (!hit || now - hit.at > this.maxAgeMs) return ABSENT;
    hit.used = true;
    return hit.expiresAt !== undefined && hit.expiresAt <= now ? ABSENT : { value: hit.value, version: hit.version };
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  remember(key: string, row: CachedRow, expiresAt?: number, now = Date.now()): void {
    const hit = this.rows.get(key);
    if (hit) {
      hit.value = row.value;
      hit.version = row.version;
      hit.expiresAt = expiresAt;
      hit.at = now;
      hit.used = true;
      return;
    }
    this.rows.set(key, { value: row.value, version: row.version, expiresAt, at: now, used: false });
    if (this.rows.size > this.capacity) this.evict();
  }

  /**
   * Drop an eighth of the capacity at once, oldest first, passing over (and clearing the mark of)
   * keys used since the last pass: the "second chance" way to keep the keys in use without moving
   * them. Keys are kept in the order they were first learnt.
   */
  private evict(): void {
    let n = this.rows.size - this.capacity + (this.capacity >> 3);
    for (const [key, entry] of this.rows) {
      if (n <= 0) return;
      if (entry.used) entry.used = false;
      else {
        this.rows.delete(key);
        n--;
      }
    }
    // Every key was in use: the oldest go anyway.
    for (const key of this.rows.keys()) {
      if (n-- <= 0) return;
      this.rows.delete(key);
    }
  }

  forget(key: string): void {
    this.rows.delete(key);
  }

  clear(): void {
    this.rows.clear();
  }
}
