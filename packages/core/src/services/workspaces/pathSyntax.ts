/**
 * Rule 1, lexical half: turn a caller's path into a normalised relative path, or refuse it.
 * No filesystem access happens here, so a refusal never depends on what exists on disk.
 *
 * Paths are taken literally (never percent-decoded, never Unicode-normalised); anything that
 * another layer could decode or interpret differently is refused instead of guessed at.
 */

/** Longest accepted path, in UTF-16 code units (Linux PATH_MAX is 4096 bytes). */
export const MAX_PATH_LENGTH = 4096;
/** Longest accepted path component, in UTF-8 bytes (NAME_MAX). */
export const MAX_SEGMENT_BYTES = 255;
/**
 * Most components of an accepted path. The blocked-path rules match every parent folder, so
 * checking a path costs about (components × length): 2,000 one-letter folders in 4,096
 * characters held the event loop for a third of a second per request.
 */
export const MAX_PATH_DEPTH = 128;

// C0 and C1 controls (NUL included), DEL.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Backslash (Windows separator), colon (drive letters, URL schemes, NTFS streams).
const SEPARATOR_TRICKS = /[\\:]/;
// Percent escapes (%2e, %252e, %c0%ae...) and IIS-style %u002e: refused, never decoded.
const PERCENT_ESCAPE = /%(?:[0-9a-f]{2}|u[0-9a-f]{4})/i;
// Lone UTF-16 surrogates and U+FFFD: what overlong or invalid UTF-8 turns into after decoding.
const BROKEN_UNICODE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\uFFFD/;
// Dots and slashes that look like "." or "/" (fullwidth, one-dot leader, division slash...)
// and invisible or direction-changing characters used to disguise names.
const LOOKALIKES =
  /[\u2024\u2025\u2026\u3002\uFE52\uFF0E\u2044\u2215\u2216\u29F5\u29F8\u29F9\uFE68\uFF0F\uFF3C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/;

/**
 * Whether one path component (a name inside a directory) is acceptable. Used for every
 * component of a requested path and for every directory entry listFiles returns, so a listed
 * name is always one that readFile would accept.
 */
export function isSafeName(name: string): boolean {
  if (!safeForm(name) || BROKEN_UNICODE.test(name) || LOOKALIKES.test(name)) return false;
  // Compatibility characters fold (NFKC, as some file systems, shares and tools do) into the
  // syntax refused above: `︰` into `..`, `：` into `:`, `％` into `%`, `℀` into `a/c`, `⒈` into
  // `1.`. Refused when the folded name would be; the whole class, not a list of look-alikes.
  if (NON_ASCII.test(name)) {
    const folded = name.normalize('NFKC');
    if (folded !== name && !safeForm(folded)) return false;
  }
  return Buffer.byteLength(name, 'utf8') <= MAX_SEGMENT_BYTES;
}

const NON_ASCII = /[^\u0000-\u007f]/;

/** The checks of isSafeName that a compatibility-folded name must pass too. */
function safeForm(name: string): boolean {
  if (name.length === 0 || name === '.' || name === '..') return false;
  if (name.includes('/')) return false;
  if (CONTROL.test(name) || SEPARATOR_TRICKS.test(name) || PERCENT_ESCAPE.test(name)) return false;
  // "..." and friends, and names Windows would silently trim to something else ("x.env.", ".. ").
  return !(/^\.+$/.test(name) || name.endsWith('.') || name.endsWith(' '));
}

/**
 * Normalise a relative path: `''`, `'.'` and `'./'` mean the workspace root and become `''`;
 * repeated and trailing slashes and `.` components are dropped (what `path.posix.normalize`
 * does once `..` is excluded). Returns `null` when the path must be refused: absolute, UNC,
 * drive-letter, `~`, any `..` component, more than MAX_PATH_DEPTH components, NUL or other controls, backslashes, percent escapes,
 * broken Unicode, look-alike dots and slashes, or an unsafe component (see `isSafeName`).
 */
export function normalizeRelative(input: string): string | null {
  if (typeof input !== 'string' || input.length > MAX_PATH_LENGTH) return null;
  // `～` (fullwidth tilde) folds into `~`.
  if (input.startsWith('/') || input.startsWith('~') || input.startsWith('\uFF5E')) return null;
  const out: string[] = [];
  for (const segment of input.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (!isSafeName(segment) || out.length === MAX_PATH_DEPTH) return null;
    out.push(segment);
  }
  return out.join('/');
}
