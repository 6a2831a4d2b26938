/**
 * A deep copy of a stored value, as `structuredClone` makes it, for the memory store's reads and
 * writes. Stored values are JSON-like (plain objects, arrays, primitives): those are copied here
 * directly, several times faster than `structuredClone`'s serialize-and-deserialize round (a
 * metered call copies its day and statistics rows a few times). Anything else (a Date, a Map, a
 * typed array, a function that must fail to store) goes through `structuredClone` itself.
 */
export function copyValue<T>(value: T): T {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'function' || typeof value === 'symbol' ? structuredClone(value) : value;
  }
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyValue(value[i]);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const copied = copyValue((value as Record<string, unknown>)[key]);
    // An own "__proto__" key (JSON.parse makes one from caller input) stays a key, as structuredClone
    // keeps it: assigning it would set the copy's prototype instead.
    if (key === '__proto__') Object.defineProperty(out, key, { value: copied, enumerable: true, writable: true, configurable: true });
    else out[key] = copied;
  }
  return out as T;
}
