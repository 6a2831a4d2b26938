import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigProblem } from './ConfigError.js';

/** The fields the cross-field rules read, so they run both on the resolved config and inside the schema. */
export interface AuthFacts {
  host: string;
  storage: { type: string; dir: string; sqlite?: { file?: string | undefined } | undefined };
  jwt: { secret?: string | undefined };
  oauth: {
    enabled?: boolean | undefined;
    encryptionKey?: string | undefined;
    providerClientId?: string | undefined;
    provider?: unknown;
    registration: { policy: 'open' | 'token'; initialAccessToken?: string | undefined };
    sessionStorage?: { type: string; filePath?: string | undefined } | undefined;
  };
}

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Is this a loopback host name or address (127.0.0.0/8, ::1, localhost)? */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * The database file of `oauth.sessionStorage` type 'file' (the embedded store): `filePath` itself,
 * or `oauth.db` in it when it names a directory; default `<storage.dir>/oauth.db`.
 */
export function oauthSessionFile(storageDir: string, filePath: string | undefined): string {
  if (filePath === undefined) return join(storageDir, 'oauth.db');
  try {
    if (statSync(filePath).isDirectory()) return join(filePath, 'oauth.db');
  } catch {
    // not there yet: a file path
  }
  return filePath;
}

/** Problems that prevent running the OAuth authorization server (config check, schema and createServer). */
export function oauthConfigProblems(config: AuthFacts): ConfigProblem[] {
  const o = config.oauth;
  const problems: ConfigProblem[] = [];
  if (!o.encryptionKey) problems.push({ path: 'oauth.encryptionKey', message: 'required to enable OAuth (at least 32 characters)' });
  if (!o.providerClientId)
    problems.push({ path: 'oauth.providerClientId', message: 'required: the client id issued by the identity provider' });
  if (!o.provider)
    problems.push({
      path: 'oauth.provider',
      message: "required: { issuer } , { authorizationUrl, tokenUrl, userinfoUrl } or { preset: 'google' | 'github' }",
    });
  if (o.registration.policy === 'token' && (o.registration.initialAccessToken?.length ?? 0) < 32) {
    problems.push({
      path: 'oauth.registration.initialAccessToken',
      message: "policy 'token' needs an initial access token of at least 32 characters",
    });
  }
  const embedded = config.storage.type === 'sqlite';
  const mainFile = config.storage.sqlite?.file ?? join(config.storage.dir, 'ai-backend.db');
  if (
    o.sessionStorage?.type === 'file' &&
    embedded &&
    resolve(oauthSessionFile(config.storage.dir, o.sessionStorage.filePath)) === resolve(mainFile)
  ) {
    problems.push({
      path: 'oauth.sessionStorage.filePath',
      message: 'must differ from the main SQLite file (or leave sessionStorage unset to share the main storage)',
    });
  }
  return problems;
}

/**
 * The cross-field rules `serve` enforces, as config problems with their key paths. They run
 * inside ConfigSchema, so `config check` refuses exactly what `serve` refuses.
 */
export function crossFieldProblems(
  config: AuthFacts & { allowUnauthenticatedRemote: boolean; auth: { servesWithoutAuth: boolean; oauthServer: 'running' | 'off' } },
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  // Only `oauth.enabled: true` runs the server with a piece missing (unset runs it only when complete).
  if (config.auth.oauthServer === 'running') problems.push(...oauthConfigProblems(config));
  if (!isLoopbackHost(config.host) && config.auth.servesWithoutAuth && !config.allowUnauthenticatedRemote) {
    problems.push({
      path: 'host',
      message: `refusing to serve without authentication on non-loopback address ${config.host}; configure jwt.secret or oauth, bind to 127.0.0.1, or set allowUnauthenticatedRemote: true to accept the risk`,
    });
  }
  return problems;
}
