import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, sqliteFile, type ConfigProblem, type ResolvedConfig, type StorageConfig } from '@ai-backend/core';

/**
 * The database file of `oauth.sessionStorage` type 'file': `filePath` itself, or `oauth.db` in it
 * when it names a directory; default `<storage.dir>/oauth.db`.
 */
function sessionFile(config: ResolvedConfig, filePath: string | undefined): string {
  if (filePath === undefined) return join(config.storage.dir, 'oauth.db');
  try {
    if (statSync(filePath).isDirectory()) return join(filePath, 'oauth.db');
  } catch {
    // not there yet: a file path
  }
  return filePath;
}

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

/** Problems that prevent enabling the OAuth server (for `config check` and createServer). */
export function checkOAuthConfig(config: ResolvedConfig): ConfigProblem[] {
  const o = config.oauth;
  const problems: ConfigProblem[] = [];
  if (!o.encryptionKey) problems.push({ path: 'oauth.encryptionKey', message: 'required to enable OAuth (at least 32 characters)' });
  if (!o.providerClientId) problems.push({ path: 'oauth.providerClientId', message: "required: the client id issued by the identity provider" });
  if (!o.provider) problems.push({ path: 'oauth.provider', message: "required: { issuer } , { authorizationUrl, tokenUrl, userinfoUrl } or { preset: 'google' | 'github' }" });
  if (o.registration.policy === 'token' && (o.registration.initialAccessToken?.length ?? 0) < 32) {
    problems.push({ path: 'oauth.registration.initialAccessToken', message: "policy 'token' needs an initial access token of at least 32 characters" });
  }
  if (o.sessionStorage?.type === 'file' && config.storage.type === 'sqlite' && resolve(sessionFile(config, o.sessionStorage.filePath)) === resolve(sqliteFile(config.storage))) {
    problems.push({ path: 'oauth.sessionStorage.filePath', message: 'must differ from the main SQLite file (or leave sessionStorage unset to share the main storage)' });
  }
  return problems;
}

/** Validate and narrow; throws ConfigError listing every problem. */
export function resolveOAuthSettings(config: ResolvedConfig): OAuthSettings {
  const problems = checkOAuthConfig(config);
  if (problems.length > 0) throw new ConfigError(problems);
  const o = config.oauth;
  const s = o.sessionStorage;
  // 'file' keeps its spec meaning: the embedded database, at filePath.
  const storage: StorageConfig | undefined = s && {
    ...config.storage,
    type: s.type === 'file' ? 'sqlite' : s.type,
    sqlite: { ...config.storage.sqlite, file: sessionFile(config, s.filePath) },
    redis: s.redis,
  };
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
