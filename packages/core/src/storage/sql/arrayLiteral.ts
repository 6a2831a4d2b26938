/**
 * A PostgreSQL array literal (`{"a","b",NULL,12}`) for a `text[]` or `bigint[]` parameter, the text
 * pg itself would send for the JS array, made in one native call.
 *
 * Why not leave the array to pg: its encoder escapes each element with two regex replaces and
 * joins them by string concatenation. A metered call's two `aib_tx` calls carry 3-4 KB of JSON
 * text in arrays, full of quotes, and that encoding was 50 of the 165 KB the billing loop
 * allocated per call and the largest piece of string work in it (performance.md, "Metered calls:
 * where the time goes"). Given a string, pg sends it as it is.
 *
 * `JSON.stringify` of an array of strings quotes each element and escapes `"` and `\` with a
 * backslash, which is exactly the array literal's quoting. It also escapes control characters and
 * lone surrogates as `\n` or `\uXXXX`, which an array literal would read as plain letters, so an
 * array holding such a string (never the JSON texts of values, which `JSON.stringify` wrote; a
 * key might) takes the element-by-element way. JSON's `null` is NULL to PostgreSQL (unquoted,
 * either case); a number is written as `String` writes it (a non-finite one, which JSON would make
 * null, takes the other way too, so PostgreSQL refuses it as it would pg's `NaN`).
 */
export function arrayLiteral(values: ReadonlyArray<string | number | null>): string {
  for (const v of values)
    if (typeof v === 'string' ? NEEDS_SLOW_WAY.test(v) : typeof v === 'number' && !Number.isFinite(v)) return slowLiteral(values);
  const json = JSON.stringify(values);
  return `{${json.slice(1, -1)}}`;
}

/** What `JSON.stringify` would escape other than `"` and `\`. */
const NEEDS_SLOW_WAY = /[\u0000-\u001f\ud800-\udfff]/;

/** Element by element, as pg's own encoder: quoted, with `"` and `\` escaped, everything else as it is. */
function slowLiteral(values: ReadonlyArray<string | number | null>): string {
  return `{${values.map((v) => (v === null || v === undefined ? 'NULL' : typeof v === 'number' ? String(v) : `"${v.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}
