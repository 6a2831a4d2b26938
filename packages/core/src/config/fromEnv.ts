import { ConfigError, type ConfigProblem } from './resolveConfig.js';
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
  if (env.API_KEY_SECRET) set(['apiKeys', 'secret'], env.API_KEY_SECRET);
  if (env.DATABASE_URL) {
    set(['storage', 'type'], 'postgres');
    set(['storage', 'postgres', 'connectionString'], env.DATABASE_URL);
  }
  if (env.REDIS_URL) {
    let u: URL;
    try {
      u = new URL(env.REDIS_URL);
    } catch {
      throw new ConfigError([{ path: 'REDIS_URL', message: 'must be a URL such as redis://host:6379/0 (rediss:// for TLS)' }]);
    }
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

/** Which config key each environment variable sets (configFromEnv above), to name the variable in errors. */
const ENV_KEYS: Record<string, string> = {
  PORT: 'port',
  HOST: 'host',
  CORS_ORIGIN: 'cors.origin',
  JWT_SECRET: 'jwt.secret',
  OAUTH_ENCRYPTION_KEY: 'oauth.encryptionKey',
  LOG_LEVEL: 'monitoring.logging.level',
  BYOK_VAULT_KEY: 'billing.vaultKey',
  PURCHASE_WEBHOOK_SECRET: 'billing.webhookSecret',
  API_KEY_SECRET: 'apiKeys.secret',
  REDIS_URL: 'storage.redis',
  ANTHROPIC_API_KEY: 'ai.providers.anthropic.apiKey',
  OPENAI_API_KEY: 'ai.providers.openai.apiKey',
  GOOGLE_GENERATIVE_AI_API_KEY: 'ai.providers.google.apiKey',
  OPENROUTER_API_KEY: 'ai.providers.openrouter.apiKey',
};

/**
 * Name the environment variable in problems about values it supplied (the environment overrides
 * the file): `OAUTH_ENCRYPTION_KEY: must be at least 32 characters`, not the key path.
 */
export function attributeToEnv(problems: ConfigProblem[], env: Env): ConfigProblem[] {
  const set = Object.entries(ENV_KEYS).filter(([name]) => env[name]);
  return problems.map((p) => {
    const from = set.find(([, key]) => p.path === key || p.path.startsWith(key + '.'));
    return from ? { ...p, path: from[0] } : p;
  });
}
