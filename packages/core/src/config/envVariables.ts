import { ConfigError } from './resolveConfig.js';

type Env = Record<string, string | undefined>;
/** Set one key path of the config being built. */
type Set = (path: string, value: unknown) => void;

/** One environment variable: what it sets, and how its text becomes config values. */
export interface EnvVariable {
  name: string;
  /**
   * The key paths it sets. A refused value at (or under) one of them is reported under the
   * variable's name, since that is what the user wrote (attributeToEnv).
   */
  keys: readonly string[];
  /** What it sets, in words (docs/configuration.md lists the same, checked by a test). */
  description: string;
  /** Write the config keys for this value; `env` for variables that depend on another one. */
  apply(value: string, set: Set, env: Env): void;
}

const PROVIDER_KEYS = [
  ['ANTHROPIC_API_KEY', 'anthropic'],
  ['OPENAI_API_KEY', 'openai'],
  ['GOOGLE_GENERATIVE_AI_API_KEY', 'google'],
  ['OPENROUTER_API_KEY', 'openrouter'],
] as const;

/** A variable that sets one key to its text as is. */
const text = (name: string, key: string, description: string): EnvVariable => ({
  name,
  keys: [key],
  description,
  apply: (v, set) => set(key, v),
});

/**
 * Every environment variable ai-backend reads, in one table: configFromEnv reads them from it,
 * attributeToEnv names them in errors from it, and docs/configuration.md lists them (a test keeps
 * the page and the table equal). Nothing else reads process.env.
 */
export const ENV_VARIABLES: readonly EnvVariable[] = [
  {
    name: 'PORT',
    keys: ['port'],
    description: 'port',
    apply: (v, set) => {
      // Text that is no whole number must fail as such, not as "expected number, received NaN".
      if (!/^\d+$/.test(v.trim())) throw new ConfigError([{ path: 'PORT', message: `must be a port number (0-65535), got "${v}"` }]);
      set('port', Number(v));
    },
  },
  text('HOST', 'host', 'host'),
  text('CORS_ORIGIN', 'cors.origin', 'cors.origin (comma-separated list)'),
  text('JWT_SECRET', 'jwt.secret', 'jwt.secret'),
  text('OAUTH_ENCRYPTION_KEY', 'oauth.encryptionKey', 'oauth.encryptionKey'),
  text('LOG_LEVEL', 'monitoring.logging.level', 'monitoring.logging.level'),
  text('BYOK_VAULT_KEY', 'billing.vaultKey', 'billing.vaultKey (falls back to oauth.encryptionKey)'),
  text('API_KEY_SECRET', 'apiKeys.secret', 'apiKeys.secret (HMAC key of stored API key hashes; derived from another secret when unset)'),
  text('PURCHASE_WEBHOOK_SECRET', 'billing.webhookSecret', 'billing.webhookSecret (enables POST /webhooks/purchase)'),
  {
    name: 'DATABASE_URL',
    keys: ['storage.postgres'],
    description: 'storage.type = postgres with this postgres.connectionString',
    apply: (v, set) => {
      set('storage.type', 'postgres');
      set('storage.postgres.connectionString', v);
    },
  },
  {
    name: 'REDIS_URL',
    keys: ['storage.redis'],
    description:
      "storage.redis = host, port, password, db, tls (rediss:); with DATABASE_URL it is the shared store (storage.shared: 'redis'), alone it is the whole store (storage.type: 'redis')",
    apply: (v, set, env) => {
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        throw new ConfigError([{ path: 'REDIS_URL', message: 'must be a URL such as redis://host:6379/0 (rediss:// for TLS)' }]);
      }
      // With a database, Redis holds the hot shared state; alone, it holds everything.
      if (env.DATABASE_URL) set('storage.shared', 'redis');
      else set('storage.type', 'redis');
      set('storage.redis', {
        host: u.hostname,
        port: Number(u.port || 6379),
        ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
        ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
        tls: u.protocol === 'rediss:',
      });
    },
  },
  ...PROVIDER_KEYS.map(([name, id]) => text(name, `ai.providers.${id}.apiKey`, `ai.providers.${id}.apiKey`)),
];
