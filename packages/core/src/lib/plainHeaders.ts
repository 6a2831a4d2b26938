/**
 * A fetch `init.headers` as a plain record, for code that reads or forwards them without a
 * `Headers` object per request (the upstream request and its observation). The AI SDK leaves
 * optional headers as undefined; fetch drops those, and so does this.
 */
export function plainHeaders(h: HeadersInit | undefined): Record<string, string> {
  if (!h) return {};
  if (h instanceof Headers || Array.isArray(h)) return Object.fromEntries(new Headers(h));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = v;
  return out;
}
