import { CoreError } from '../kernel/CoreError.js';

/**
 * JSON text with object keys sorted, so two deep-equal values always give the same string.
 * The redis backend stores values in this form: compare-and-set is then a plain
 * string comparison (in Lua for redis) and still means "deep-equal", whatever the key order.
 * `toJSON` (e.g. Date) is applied before sorting, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  }) as string | undefined;
  // JSON.stringify(undefined | function | symbol) gives undefined: nothing could be stored.
  if (text === undefined) throw new CoreError('INVALID_PARAMS', 'storage values must be JSON-serialisable');
  return text;
}

/**
 * Plain `JSON.stringify` text of a stored value, for the SQL stores: no key sorting (V8's native
 * serialiser without a replacer function, several times faster than canonicalJson on a billing
 * row). Their compare-and-set compares values, not texts, so no canonical form is needed.
 */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value) as string | undefined;
  // JSON.stringify(undefined | function | symbol) gives undefined: nothing could be stored.
  if (text === undefined) throw new CoreError('INVALID_PARAMS', 'storage values must be JSON-serialisable');
  return text;
}

/** Expiry timestamp (ms since epoch) for a ttl, or undefined; a falsy ttl means "no expiry" as in MemoryStorage. */
export function expiresAtFor(ttlMs: number | undefined, now = Date.now()): number | undefined {
  return ttlMs ? now + ttlMs : undefined;
}

/** TTLs from which a store may keep a row's expiry instead of moving it (keepsExpiry). */
export const EXPIRY_SLACK_FROM_TTL_MS = 3_600_000;

/**
 * Whether a row rewritten in a transaction may keep its stored expiry (`was`) instead of taking
 * `next`: both absent, or a TTL of an hour or more (`ttlMs`) whose new expiry is within 1/256 of
 * it of the stored one (the Storage contract, TxWrite). The row then expires up to TTL/256 before
 * or after now + TTL: 37.5 hours either way on a 400-day day row, under 6 hours on a 62-day spend
 * window. Such TTLs are garbage collection, while moving the row's index entry on every write
 * costs a page (SQLite) or makes the update a non-HOT one (PostgreSQL).
 */
export function keepsExpiry(was: number | null, next: number | null, ttlMs: number | undefined): boolean {
  if (was === null || next === null) return was === next;
  return ttlMs !== undefined && ttlMs >= EXPIRY_SLACK_FROM_TTL_MS && Math.abs(next - was) <= ttlMs / 256;
}
