// `credentials` (Vertex service-account JSON), `accessKeyId` and `headers` (named providers may carry auth headers) too.
const SECRET_KEY =
  /secret|password|apikey|api_key|encryptionkey|token|vaultkey|privatekey|systemprompts|credentials|accesskeyid|^headers$/i;
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;
const REDACTED = '[redacted]';

/**
 * A URL with its credentials hidden: userinfo (`https://user:pass@host`) and every query value
 * (`?key=...`) become `[redacted]`; scheme, host, port and path stay readable. Strings that are
 * not absolute URLs come back unchanged.
 */
export function redactUrl(value: string): string {
  if (!URL_LIKE.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Looks like a URL but does not parse: it may still hold a secret after `//`.
    return value.includes('@') || value.includes('?') ? REDACTED : value;
  }
  if (!url.username && !url.password && !url.search) return value;
  const userinfo = url.username || url.password ? `${url.username ? REDACTED : ''}${url.password ? `:${REDACTED}` : ''}@` : '';
  const query = url.search ? `?${[...url.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=${REDACTED}`).join('&')}` : '';
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${query}${url.hash}`;
}

/**
 * A deep copy with every secret-looking value replaced, for `config print` and admin.getConfig.
 * Every string under a secret key is redacted too (e.g. the texts of `ai.systemPrompts`), and
 * every URL-valued string anywhere (baseUrl, issuer, redis url...) loses its userinfo and query
 * values, whatever its key is called.
 */
export function redactConfig<T>(value: T): T {
  const walk = (v: unknown, key: string, inSecret: boolean): unknown => {
    const secret = inSecret || SECRET_KEY.test(key);
    if (typeof v === 'string') return secret ? (v ? REDACTED : v) : redactUrl(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, key, secret));
    if (typeof v === 'object' && v !== null) {
      if ('_def' in v) return '[router]';
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k, secret)]));
    }
    return v;
  };
  return walk(value, '', false) as T;
}
