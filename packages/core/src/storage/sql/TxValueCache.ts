/** A cached raw row: the stored text, or `undefined` for a key known to be absent. */
interface Cached {
  value: string | undefined;
  /** ms; the row stops counting from then on (as the store's own `expires_at`). */
  expiresAt: number | undefined;
}

/**
 * What this process last read or committed for each recently used key, as the guess an
 * optimistic transaction plans against instead of reading first. Never trusted on its own: the
 * transaction's commit batch checks, under the keys' locks, that the store still holds exactly
 * these values, and a miss falls back to a fresh read. Bounded (least recently used goes first).
 */
export class TxValueCache {
  private readonly rows = new Map<string, Cached>();

  constructor(private readonly capacity = 10_000) {}

  /** The guess for `key` at `now`: the cached text, or undefined (absent, expired or unknown). */
  guess(key: string, now: number): string | undefined {
    const hit = this.rows.get(key);
    if (!hit) return undefined;
    this.rows.delete(key);
    this.rows.set(key, hit); // most recently used last
    return hit.expiresAt !== undefined && hit.expiresAt <= now ? undefined : hit.value;
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  remember(key: string, value: string | undefined, expiresAt?: number): void {
    this.rows.delete(key);
    this.rows.set(key, { value, expiresAt });
    if (this.rows.size > this.capacity) this.rows.delete(this.rows.keys().next().value!);
  }

  forget(key: string): void {
    this.rows.delete(key);
  }

  clear(): void {
    this.rows.clear();
  }
}
