const SECRET_KEY = /secret|password|apikey|api_key|encryptionkey|token|vaultkey|privatekey/i;

/** A deep copy with every secret-looking value replaced, for `config print` and admin.getConfig. */
export function redactConfig<T>(value: T): T {
  const walk = (v: unknown, key: string): unknown => {
    if (typeof v === 'string' && SECRET_KEY.test(key)) return v ? '[redacted]' : v;
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (typeof v === 'object' && v !== null) {
      if ('_def' in v) return '[router]';
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    }
    return v;
  };
  return walk(value, '') as T;
}
