import { RecentMap } from '../../lib/RecentMap.js';

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
}

const ABSENT: CachedRow = { value: undefined, version: undefined };

/**
 * What this process last read or committed for each recently used key, as the guess an
 * optimistic transaction plans against instead of reading first. Never trusted on its own: the
 * transaction checks, under the keys' locks, that each row still has the version this guess
 * carries, and a miss falls back to a fresh read. Bounded (RecentMap: keys not used lately go
 * first), and a guess older than `maxAgeMs` is not used, so a 32-bit row version can never have
 * wrapped around to the same number behind it.
 */
export class TxValueCache {
  private readonly rows: RecentMap<string, Cached>;

  constructor(
    capacity = 10_000,
    private readonly maxAgeMs = 10 * 60_000,
  ) {
    this.rows = new RecentMap(capacity);
  }

  /** The guess for `key` at `now`: the cached row, or absent (absent, expired, too old or unknown). A copy: entries change in place. */
  guess(key: string, now: number): CachedRow {
    const hit = this.rows.get(key);
    if (!hit || now - hit.at > this.maxAgeMs) return ABSENT;
    return hit.expiresAt !== undefined && hit.expiresAt <= now ? ABSENT : { value: hit.value, version: hit.version };
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  remember(key: string, row: CachedRow, expiresAt?: number, now = Date.now()): void {
    const hit = this.rows.get(key);
    if (!hit) return this.rows.set(key, { value: row.value, version: row.version, expiresAt, at: now });
    hit.value = row.value;
    hit.version = row.version;
    hit.expiresAt = expiresAt;
    hit.at = now;
  }

  forget(key: string): void {
    this.rows.delete(key);
  }

  clear(): void {
    this.rows.clear();
  }
}
