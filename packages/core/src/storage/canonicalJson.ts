import { CoreError } from '../kernel/CoreError.js';

/**
 * JSON text with object keys sorted, so two deep-equal values always give the same string.
 * The file and redis backends store values in this form: compare-and-set is then a plain
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

/** Expiry timestamp (ms since epoch) for a ttl, or undefined; a falsy ttl means "no expiry" as in MemoryStorage. */
export function expiresAtFor(ttlMs: number | undefined, now = Date.now()): number | undefined {
  return ttlMs ? now + ttlMs : undefined;
}
