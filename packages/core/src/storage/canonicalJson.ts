import { CoreError } from '../kernel/CoreError.js';

/**
 * JSON text with object keys sorted, so two deep-equal values always give the same string.
 * The redis backend stores values in this form: compare-and-set is then a plain
 * string comparison (in Lua for redis) and still means "deep-equal", whatever the key order.
 * `toJSON` (e.g. Date) is applied before sorting, as JSON.stringify does.
 *
 * Plain data (what the stores hold: plain objects, arrays, primitives) is copied with its keys
 * sorted and given to JSON.stringify without a replacer, about twice as fast as the replacer,
 * which V8 calls back for every value; anything else (a `toJSON`, a class instance, a boxed
 * primitive, an own `__proto__` key, nesting deeper than 64) takes the replacer, whose text is the
 * reference (canonicalJson.test.ts compares the two).
 */
export function canonicalJson(value: unknown): string {
  const plain = sortedPlain(value, 0);
  const text = (plain === NOT_PLAIN ? JSON.stringify(value, sortingReplacer) : JSON.stringify(plain)) as string | undefined;
  // JSON.stringify(undefined | function | symbol) gives undefined: nothing could be stored.
  if (text === undefined) throw new CoreError('INVALID_PARAMS', 'storage values must be JSON-serialisable');
  return text;
}

function sortingReplacer(_key: string, v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
  return sorted;
}

const NOT_PLAIN = Symbol('not plain');

/** `v` with every object's keys in sorted order (itself where they already are), or NOT_PLAIN. */
function sortedPlain(v: unknown, depth: number): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth > 64) return NOT_PLAIN;
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) return NOT_PLAIN;
    let copy: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const c = sortedPlain(v[i], depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      if (c !== v[i]) (copy ??= v.slice())[i] = c;
    }
    return copy ?? v;
  }
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in v) return NOT_PLAIN;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] === '__proto__') return NOT_PLAIN;
    if (i > 0 && keys[i - 1]! > keys[i]!) sorted = false;
  }
  if (!sorted) keys.sort();
  let copy: Record<string, unknown> | undefined = sorted ? undefined : {};
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const c = sortedPlain(o[k], depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    if (copy) copy[k] = c;
    else if (c !== o[k]) {
      copy = {};
      for (let j = 0; j < i; j++) copy[keys[j]!] = o[keys[j]!];
      copy[k] = c;
    }
  }
  return copy ?? v;
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
