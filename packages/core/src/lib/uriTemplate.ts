export interface UriTemplate {
  /** Variable names in order of appearance. */
  variables: string[];
  /** The variables of a URI this template matches, or null. */
  match(uri: string): Record<string, string> | null;
  /** Expand with values (percent-encoded; `{+var}` keeps reserved characters such as `/`). */
  expand(values: Record<string, string>): string;
}

const VAR = /\{(\+?)([A-Za-z0-9_]+)\}/g;

/**
 * RFC 6570 level 1 and 2 (`{var}` and `{+var}`), which is what resource templates use in
 * practice. `{var}` matches one path segment (no `/`, `?` or `#`); `{+var}` may span segments.
 */
export function compileUriTemplate(template: string): UriTemplate {
  const variables: string[] = [];
  const reserved = new Set<string>();
  let pattern = '';
  let last = 0;
  for (const m of template.matchAll(VAR)) {
    pattern += escape(template.slice(last, m.index));
    variables.push(m[2]!);
    if (m[1]) reserved.add(m[2]!);
    pattern += m[1] ? '([^?#]+)' : '([^/?#]+)';
    last = m.index! + m[0].length;
  }
  pattern += escape(template.slice(last));
  const re = new RegExp(`^${pattern}$`);
  return {
    variables,
    match(uri) {
      const m = re.exec(uri);
      if (!m) return null;
      const out: Record<string, string> = {};
      for (let i = 0; i < variables.length; i++) {
        try {
          out[variables[i]!] = decodeURIComponent(m[i + 1]!);
        } catch {
          return null; // malformed percent-encoding
        }
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

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
