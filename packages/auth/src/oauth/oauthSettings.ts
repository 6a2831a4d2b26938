import {
  ConfigError,
  oauthConfigProblems,
  oauthSessionFile,
  type ConfigProblem,
  type ResolvedConfig,
  type StorageConfig,
} from '@ai-backend/core/internal';

type OAuthConfig = ResolvedConfig['oauth'];
export type UpstreamConfig = NonNullable<OAuthConfig['provider']>;

/** `config.oauth` once checked: the keys the authorization server cannot run without are present. */
export type OAuthSettings = OAuthConfig & {
  encryptionKey: string;
  providerClientId: string;
  provider: UpstreamConfig;
  /** Where sessions live; undefined means the runtime's storage. */
  storage: StorageConfig | undefined;
  trustProxy: boolean;
  admin: ResolvedConfig['admin'];
};

/** Problems that prevent enabling the OAuth server; the rule lives in core's config schema. */
export function checkOAuthConfig(config: ResolvedConfig): ConfigProblem[] {
  return oauthConfigProblems(config);
}

/** Validate and narrow; throws ConfigError listing every problem. */
export function resolveOAuthSettings(config: ResolvedConfig): OAuthSettings {
  const problems = checkOAuthConfig(config);
  if (problems.length > 0) throw new ConfigError(problems);
  const o = config.oauth;
  const s = o.sessionStorage;
  // 'file' keeps its spec meaning: the embedded database, at filePath (with the main store's durability).
  const base = { dir: config.storage.dir, shared: 'store' as const };
  // The OAuth file is opened like the main store when that is SQLite (same durability, same driver).
  const { synchronous, driver } =
    config.storage.type === 'sqlite' ? config.storage.sqlite : ({ synchronous: 'normal', driver: 'auto' } as const);
  const storage: StorageConfig | undefined =
    s === undefined
      ? undefined
      : s.type === 'memory'
        ? { ...base, type: 'memory' }
        : s.type === 'redis'
          ? { ...base, type: 'redis', redis: s.redis }
          : { ...base, type: 'sqlite', sqlite: { synchronous, driver, file: oauthSessionFile(config.storage.dir, s.filePath) } };
  return {
    ...o,
    encryptionKey: o.encryptionKey!,
    providerClientId: o.providerClientId!,
    provider: o.provider!,
    storage,
    trustProxy: config.trustProxy,
    admin: config.admin,
  };
}
