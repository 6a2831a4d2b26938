/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `s` is Unicode text: no unpaired UTF-16 surrogate (`"\ud800"`, which JSON can carry).
 * Such a string cannot be written as UTF-8 (a store gets U+FFFD, so two ids become one), and
 * `encodeURIComponent`, which builds every per-user storage key, throws on it. (String#isWellFormed
 * is ES2024, past the packages' TypeScript lib.)
 */
export function isUnicodeText(s: string): boolean {
  return !UNPAIRED.test(s);
}
