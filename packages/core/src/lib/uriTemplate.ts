export interface UriTemplate {
  /** Variable names in order of appearance. */
  variables: string[];
  /** The variables of a URI this template matches, or null. */
  match(uri: string): Record<string, string> | null;
  /** Expand with values (percent-encoded; `{+var}` keeps reserved characters such as `/`). */
  expand(values: Record<string, string>): string;
}

const VAR = /\{(\+?)([A-Za-z0-9_]+)\}/g;

/** A slash, backslash or dot still percent-encoded after one decoding (double encoding). */
const ENCODED_SEPARATOR = /%(?:2f|5c|2e)/i;

/**
 * Is this variable value safe to put back into a URI that is then fetched? A URL parser resolves
 * `.` and `..` segments (also written `%2e`), and many servers treat `\` as `/`, so a value such
 * as `..` would move the read outside the template (`https://host/items/{id}` with `{id}=..`
 * reads `https://host/`). `{var}` is one segment: no slash or backslash at all, encoded or not.
 * `{+var}` may span segments, but none of them may be a dot segment and none may be written with
 * an encoded slash. Control characters (a NUL cuts paths short in some handlers) are refused too.
 */
function safeValue(raw: string, decoded: string, spansSegments: boolean): boolean {
  if (/[\u0000-\u001f\u007f\\]/.test(decoded) || ENCODED_SEPARATOR.test(decoded)) return false;
  if (!spansSegments) return decoded !== '.' && decoded !== '..' && !decoded.includes('/');
  if (/%2f/i.test(raw)) return false;
  return decoded.split('/').every((seg) => seg !== '.' && seg !== '..');
}

/**
 * RFC 6570 level 1 and 2 (`{var}` and `{+var}`), which is what resource templates use in
 * practice. `{var}` matches one path segment (no `/`, `?` or `#`); `{+var}` may span segments.
 * A value that would step out of the template once the URI is resolved (dot segments, encoded
 * slashes or backslashes) does not match (see `safeValue`).
 */
export function compileUriTemplate(template: string): UriTemplate {
  const variables: string[] = [];
  const reserved = new Set<string>();
  let pattern = '';
  let last = 0;
  for (const m of template.matchAll(VAR)) {
    pattern += escapeRegExp(template.slice(last, m.index));
    variables.push(m[2]!);
    if (m[1]) reserved.add(m[2]!);
    pattern += m[1] ? '([^?#]+)' : '([^/?#]+)';
    last = m.index! + m[0].length;
  }
  pattern += escapeRegExp(template.slice(last));
  const re = new RegExp(`^${pattern}$`);
  return {
    variables,
    match(uri) {
      const m = re.exec(uri);
      if (!m) return null;
      const out: Record<string, string> = {};
      for (let i = 0; i < variables.length; i++) {
        const raw = m[i + 1]!;
        let value: string;
        try {
          value = decodeURIComponent(raw);
        } catch {
          return null; // malformed percent-encoding
        }
        if (!safeValue(raw, value, reserved.has(variables[i]!))) return null;
        out[variables[i]!] = value;
      }
      return out;
    },
    expand(values) {
      return template.replace(VAR, (_, plus: string, name: string) => {
        const v = values[name] ?? '';
        return plus ? encodeURI(v) : encodeURIComponent(v);
      });
    },
  };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
