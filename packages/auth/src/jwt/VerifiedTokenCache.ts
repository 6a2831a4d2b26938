import type { Identity } from '@ai-backend/core';
import { RecentMap, sha256 } from '@ai-backend/core/internal';
import { MAX_TOKEN_LENGTH } from './inspectToken.js';

interface Entry {
  identity: Identity;
  /** Epoch milliseconds after which the entry must not be used. */
  notAfter: number;
}

/**
 * A small LRU of tokens that passed every check, so a client that sends the same bearer token
 * on every request pays for a SHA-256 and a Map lookup (about 2 µs) instead of a full jose
 * verification (about 20 µs; see docs/auth-jwt.md).
 *
 * Bounded twice: at most `maxEntries` entries (those not used lately evicted first: RecentMap,
 * whose entries change in place, where a Map LRU's delete and set per request made a hot token's
 * lookup walk the dead entries of thousands of others), and each
 * entry lives no longer than the token's own validity nor `maxAgeMs`. Keyed by a hash, so
 * the cache never holds bearer tokens. Only successes are cached: a failed token is verified
 * again every time, and caching failures would let anyone fill the cache.
 */
export class VerifiedTokenCache {
  readonly #entries: RecentMap<string, Entry>;
  readonly #maxEntries: number;
  readonly #maxAgeMs: number;

  constructor(maxEntries: number, maxAgeMs = 60_000) {
    this.#maxEntries = maxEntries;
    this.#maxAgeMs = maxAgeMs;
    this.#entries = new RecentMap(maxEntries);
  }

  static keyOf(token: string): string {
    return sha256(token);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Forget every verified token (admin.clearCache 'tokens'): the next request verifies again. */
  clear(): void {
    this.#entries.clear();
  }

  /**
   * The identity of a token verified earlier and still valid, looked up by its hash; undefined
   * for any other token (one over MAX_TOKEN_LENGTH is never hashed: it cannot have been accepted).
   */
  lookup(token: string): Identity | undefined {
    return token.length <= MAX_TOKEN_LENGTH ? this.get(VerifiedTokenCache.keyOf(token)) : undefined;
  }

  get(key: string, now = Date.now()): Identity | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (now >= entry.notAfter) {
      this.#entries.delete(key);
      return undefined;
    }
    // A copy, so a caller changing its identity cannot change what the next request sees.
    return { ...entry.identity, scopes: [...entry.identity.scopes] };
  }

  /** Remember a verified token until `validUntil` (epoch ms; Infinity when it never expires). */
  set(key: string, identity: Identity, validUntil: number, now = Date.now()): void {
    if (this.#maxEntries <= 0) return;
    const notAfter = Math.min(validUntil, now + this.#maxAgeMs);
    if (notAfter <= now) return;
    this.#entries.set(key, { identity: { ...identity, scopes: [...identity.scopes] }, notAfter });
  }
}
