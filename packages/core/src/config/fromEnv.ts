import type { ConfigInput } from './schema.js';

type Env = Record<string, string | undefined>;

/**
 * The environment variables we read, in one place. They override the config file.
 * The provider keys are read here too (ANTHROPIC_API_KEY, ...), so nothing else reads process.env.
 */
export function configFromEnv(env: Env): ConfigInput {
  const out: Record<string, any> = {};
  const set = (path: string[], value: unknown) => {
    let node = out;
    for (const key of path.slice(0, -1)) node = node[key] ??= {};
    node[path[path.length - 1]!] = value;
  };
  if (env.PORT) set(['port'], Number(env.PORT));
  if (env.HOST) set(['host'], env.HOST);
  if (env.CORS_ORIGIN) set(['cors', 'origin'], env.CORS_ORIGIN);
  if (env.JWT_SECRET) set(['jwt', 'secret'], env.JWT_SECRET);
  if (env.OAUTH_ENCRYPTION_KEY) set(['oauth', 'encryptionKey'], env.OAUTH_ENCRYPTION_KEY);
  if (env.LOG_LEVEL) set(['monitoring', 'logging', 'level'], env.LOG_LEVEL);
  if (env.BYOK_VAULT_KEY) set(['billing', 'vaultKey'], env.BYOK_VAULT_KEY);
  if (env.PURCHASE_WEBHOOK_SECRET) set(['billing', 'webhookSecret'], env.PURCHASE_WEBHOOK_SECRET);
  if (env.DATABASE_URL) {
    set(['storage', 'type'], 'postgres');
    set(['storage', 'postgres', 'connectionString'], env.DATABASE_URL);
  }
  if (env.REDIS_URL) {
    const u = new URL(env.REDIS_URL);
    // With a database, Redis holds the hot shared state; alone, it holds everything.
    if (env.DATABASE_URL) set(['storage', 'shared'], 'redis');
    else set(['storage', 'type'], 'redis');
    set(['storage', 'redis'], {
      host: u.hostname,
      port: Number(u.port || 6379),
      ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
      ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
      tls: u.protocol === 'rediss:',
    });
  }
  const keys = {
    anthropic: env.ANTHROPIC_API_KEY,
    openai: env.OPENAI_API_KEY,
    google: env.GOOGLE_GENERATIVE_AI_API_KEY,
    openrouter: env.OPENROUTER_API_KEY,
  };
  for (const [id, key] of Object.entries(keys)) if (key) set(['ai', 'providers', id, 'apiKey'], key);
  return out as ConfigInput;
}

/** Deep merge of plain objects; `over` wins. Arrays and routers are replaced, not merged. */
export function mergeConfig(base: ConfigInput, over: ConfigInput): ConfigInput {
  const isPlain = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype && !('_def' in v);
  const merge = (a: unknown, b: unknown): unknown => {
    if (!isPlain(a) || !isPlain(b)) return b === undefined ? a : b;
    const result: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) result[k] = merge(a[k], v);
    return result;
  };
  return merge(base, over) as ConfigInput;
}
