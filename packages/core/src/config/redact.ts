const SECRET_KEY = /secret|password|apikey|api_key|encryptionkey|token|vaultkey|privatekey|systemprompts/i;

/**
 * A deep copy with every secret-looking value replaced, for `config print` and admin.getConfig.
 * Every string under a secret key is redacted too (e.g. the texts of `ai.systemPrompts`).
 */
export function redactConfig<T>(value: T): T {
  const walk = (v: unknown, key: string, inSecret: boolean): unknown => {
    const secret = inSecret || SECRET_KEY.test(key);
    if (typeof v === 'string' && secret) return v ? '[redacted]' : v;
    if (Array.isArray(v)) return v.map((x) => walk(x, key, secret));
    if (typeof v === 'object' && v !== null) {
      if ('_def' in v) return '[router]';
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k, secret)]));
    }
    return v;
  };
  return walk(value, '', false) as T;
}
