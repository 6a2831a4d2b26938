import { join } from 'node:path';
import { ConfigError, type ConfigProblem, type ResolvedConfig, type StorageConfig } from '@ai-backend/core';

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
  if (o.sessionStorage?.type === 'file' && o.sessionStorage.filePath === config.storage.dir && config.storage.type === 'file') {
    problems.push({ path: 'oauth.sessionStorage.filePath', message: 'must differ from storage.dir (or leave sessionStorage unset to share the main storage)' });
  }
  return problems;
}

/** Validate and narrow; throws ConfigError listing every problem. */
export function resolveOAuthSettings(config: ResolvedConfig): OAuthSettings {
  const problems = checkOAuthConfig(config);
  if (problems.length > 0) throw new ConfigError(problems);
  const o = config.oauth;
  const s = o.sessionStorage;
  const storage: StorageConfig | undefined = s && {
    type: s.type,
    dir: s.filePath ?? join(config.storage.dir, 'oauth'),
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
