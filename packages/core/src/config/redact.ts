// `credentials` (Vertex service-account JSON), `accessKeyId` and `headers` (named providers may carry auth headers) too.
// `key`: a TLS client private key (`storage.postgres.ssl.key`, PEM text).
// `env`: a stdio MCP server's environment is where its credentials go (GITHUB_PERSONAL_ACCESS_TOKEN, ...,
// often `${VAR}` expanded from ours), whatever each variable is called: every value is hidden, the names stay.
const SECRET_KEY =
  /secret|password|apikey|api_key|encryptionkey|token|vaultkey|privatekey|systemprompts|credentials|accesskeyid|^headers$|^env$|^key$/i;
/** A PEM private key, whatever key holds it (`storage.postgres.ssl.key` is one). */
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
/** A flag or header name that says its value is a credential (`--api-key`, `--token=`, `Authorization:`). */
const SECRET_NAME = /secret|passw(or)?d|pwd|api[-_]?key|token|auth|bearer|cookie|credential|private[-_]?key|access[-_]?key/i;
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
 * A stdio MCP server's argument list with the values of credential-named flags hidden:
 * `--api-key VALUE` and `--token=VALUE` (the value), `Authorization: Bearer ...` (a header an
 * argument passes, as mcp-remote's `--header` does). Other arguments are kept (URLs lose their
 * credentials as everywhere).
 */
function redactArgs(args: unknown[]): unknown[] {
  return args.map((arg, i) => {
    if (typeof arg !== 'string') return arg;
    const prev = args[i - 1];
    if (typeof prev === 'string' && /^--?[A-Za-z]/.test(prev) && !prev.includes('=') && SECRET_NAME.test(prev) && !/^-/.test(arg))
      return arg ? REDACTED : arg;
    const flag = /^(--?[A-Za-z][\w.-]*)=/.exec(arg);
    if (flag && SECRET_NAME.test(flag[1]!)) return `${flag[0]}${REDACTED}`;
    const header = /^([A-Za-z][\w-]*)\s*:\s*(?!\/\/)/.exec(arg);
    if (header && SECRET_NAME.test(header[1]!)) return `${header[1]}: ${REDACTED}`;
    return redactUrl(arg);
  });
}

/**
 * A connection string that is no URL (libpq's `host=db user=app password=...`): the password's
 * value hidden, quoted or not. URL forms go through redactUrl.
 */
function redactConnectionString(value: string): string {
  if (URL_LIKE.test(value)) return redactUrl(value);
  return value.replace(/\b(password|passwd|pwd|sslpassword)(\s*=\s*)(?:'(?:[^'\\]|\\.)*'|\S*)/gi, `$1$2${REDACTED}`);
}

/**
 * An alert receiver's URL as its origin: a Slack-, Discord- or Teams-style incoming webhook is a
 * secret in its path (`https://hooks.slack.com/services/T0/B0/XXXX`), so the path and query are
 * hidden, as the console shows receivers by origin only.
 */
function webhookOrigin(value: string): string {
  try {
    const url = new URL(value);
    return url.pathname === '/' && !url.search && !url.username && !url.password ? value : `${url.origin}/${REDACTED}`;
  } catch {
    return REDACTED;
  }
}

/**
 * A deep copy with every secret-looking value replaced, for `config print` and admin.getConfig.
 * Every string under a secret key is redacted too (e.g. the texts of `ai.systemPrompts`, the
 * values of an MCP server's `env`), and every URL-valued string anywhere (baseUrl, issuer, redis
 * url...) loses its userinfo and query values, whatever its key is called. A stdio server's
 * `args` lose the values of credential-named flags, a key=value `connectionString` its password,
 * and an alert webhook's URL all but its origin.
 */
export function redactConfig<T>(value: T): T {
  const walk = (v: unknown, key: string, inSecret: boolean): unknown => {
    const secret = inSecret || SECRET_KEY.test(key);
    if (typeof v === 'string') {
      if (secret || PEM_PRIVATE_KEY.test(v)) return v ? REDACTED : v;
      return key === 'connectionString' ? redactConnectionString(v) : redactUrl(v);
    }
    if (Array.isArray(v)) return (key === 'args' && !secret ? redactArgs(v) : v).map((x) => walk(x, key, secret));
    if (typeof v === 'object' && v !== null) {
      if ('_def' in v) return '[router]';
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [
          k,
          key === 'webhooks' && k === 'url' && typeof x === 'string' ? webhookOrigin(x) : walk(x, k, secret),
        ]),
      );
    }
    return v;
  };
  return walk(value, '', false) as T;
}
