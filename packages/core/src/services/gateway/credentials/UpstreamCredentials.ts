import type { Logger } from '../../../kernel/Logger.js';
import type { Storage } from '../../../kernel/Storage.js';
import { AuthorizationFlow, netOf, type CallbackUrls } from './authorizationFlow.js';
import { CredentialStore, type CredentialStatus, type OAuthGrant } from './CredentialStore.js';
import { checkUserHeaders } from './headerRules.js';
import { revokeToken, tokenRequest } from './oauthClient.js';
import { resourceCovers } from './oauthDiscovery.js';
import type { PerUserServerLookup } from './perUserServers.js';

/** What the gateway sends with a user's requests to an upstream, or why it has nothing to send. */
export type ResolvedCredentials = { kind: 'headers'; headers: Record<string, string> } | { kind: 'missing' | 'expired'; message: string };

export interface UpstreamCredentialsOptions {
  storage: Storage;
  logger: Logger;
  /** The configured per-user servers (config `mcpServers`, or the gateway's registry). */
  servers: PerUserServerLookup;
  /** The vault's master secret (billing.vaultKey, else oauth.encryptionKey) and earlier ones. */
  masterKey?: string;
  previousKeys?: string[];
  /** How long an authorization URL from gateway.connect stays usable, in ms. Default 10 minutes. */
  authorizationTtlMs?: number;
  /** Refresh an access token this many ms before it expires. Default 60000. */
  refreshSkewMs?: number;
  /** Clock (epoch ms). Default Date.now. */
  now?: () => number;
}

const WAIT_STEP_MS = 100;

/**
 * Per-user credentials for upstream MCP servers marked `perUser`: static headers a user stores,
 * or an OAuth grant obtained with us as the OAuth client of the upstream's authorization server.
 * The gateway asks `resolve` for the headers of each per-user connection. Secrets are encrypted
 * at rest and never returned, logged or counted; our own clients' tokens are never among them
 * (no token passthrough).
 */
export class UpstreamCredentials {
  readonly store: CredentialStore;
  readonly flow: AuthorizationFlow;
  private readonly servers: PerUserServerLookup;
  private readonly logger: Logger;
  private readonly storage: Storage;
  private readonly now: () => number;
  private readonly skewMs: number;
  /** One refresh per user and server at a time in this process; other instances wait on the stored lock. */
  private readonly refreshing = new Map<string, Promise<ResolvedCredentials>>();

  constructor(opts: UpstreamCredentialsOptions) {
    this.storage = opts.storage;
    this.logger = opts.logger;
    this.servers = opts.servers;
    this.now = opts.now ?? Date.now;
    this.skewMs = opts.refreshSkewMs ?? 60_000;
    this.store = new CredentialStore(
      opts.storage,
      { ...(opts.masterKey ? { masterKey: opts.masterKey } : {}), ...(opts.previousKeys ? { previousKeys: opts.previousKeys } : {}) },
      opts.logger,
    );
    this.flow = new AuthorizationFlow(opts.storage, this.store, opts.authorizationTtlMs ?? 600_000, this.now);
  }

  /** Store a user's static headers for a perUser server (replacing any headers or OAuth grant). */
  async setHeaders(userId: string, server: string, headers: Record<string, string>): Promise<CredentialStatus> {
    const { url } = this.servers(server);
    const status = await this.store.put(userId, server, { kind: 'headers', headers: checkUserHeaders(headers), url });
    this.logger.info('gateway: upstream credentials stored', { userId, server, kind: 'headers', headerNames: status.headerNames });
    return status;
  }

  /** Delete a user's credentials for a server; an OAuth grant is also revoked at its server where it can be (best effort). */
  async remove(userId: string, server: string): Promise<{ deleted: boolean; revoked?: boolean }> {
    const secret = await this.store.reveal(userId, server).catch(() => undefined);
    const deleted = await this.store.remove(userId, server);
    let revoked: boolean | undefined;
    if (secret?.kind === 'oauth' && secret.revocationEndpoint) {
      const net = this.netIfConfigured(server);
      if (net)
        revoked = await revokeToken(
          secret.revocationEndpoint,
          secret,
          secret.refreshToken ?? secret.accessToken,
          secret.refreshToken ? 'refresh_token' : 'access_token',
          net,
        );
    }
    if (deleted)
      this.logger.info('gateway: upstream credentials deleted', { userId, server, ...(revoked !== undefined ? { revoked } : {}) });
    return { deleted, ...(revoked !== undefined ? { revoked } : {}) };
  }

  /** A server removed from the config since the grant was made is not contacted any more. */
  private netIfConfigured(server: string) {
    try {
      return netOf(this.servers(server));
    } catch {
      return undefined;
    }
  }

  status(userId: string, server: string): Promise<CredentialStatus> {
    return this.store.status(userId, server);
  }

  /** gateway.connect: the authorization URL for this user and server (state bound to the user, single use, expiring). */
  connect(userId: string, server: string, urls: CallbackUrls): Promise<{ authorizationUrl: string; expiresAt: string }> {
    return this.flow.start(userId, this.servers(server), urls);
  }

  /** The callback route: exchange the code and store the tokens for the user the state belongs to. */
  completeAuthorization(params: { state?: string; code?: string; error?: string; iss?: string }) {
    return this.flow.complete(params, (name) => netOf(this.servers(name)));
  }

  /**
   * The headers to send to `server.url` on behalf of `userId`: stored static headers, or
   * `Authorization: Bearer` with a current access token (refreshed when it is about to expire).
   * `missing` when the user has stored nothing, `expired` when the grant is gone (revoked,
   * expired, or for another URL); both messages say how to fix it. Transient failures of the
   * authorization server throw (CoreError UPSTREAM_ERROR / UPSTREAM_TIMEOUT).
   */
  async resolve({ server, userId }: { server: { name: string; url: string }; userId: string }): Promise<ResolvedCredentials> {
    const secret = await this.store.reveal(userId, server.name);
    if (!secret) {
      return {
        kind: 'missing',
        message: `no credentials for MCP server "${server.name}": call gateway.connect({ server: "${server.name}" }) to sign in there, or gateway.setCredentials({ server: "${server.name}", headers }) to store headers`,
      };
    }
    if (secret.kind === 'headers') {
      // Like tokens, stored headers (a personal access token, an API key) go only where the user gave them for.
      if (!sameOrigin(secret.url, server.url)) return moved(server.name);
      return { kind: 'headers', headers: { ...secret.headers } };
    }
    // Tokens are for the resource they were issued for: never sent elsewhere, even after the URL changes.
    if (!resourceCovers(secret.resource, server.url)) return expired(server.name, 'was given for another URL of it');
    if (!this.needsRefresh(secret)) return bearer(secret);
    return this.refreshOnce(userId, server.name);
  }

  /**
   * The upstream answered 401 to `headers` (what `resolve` gave) before their time was up: a
   * revoked or otherwise dropped access token. Returns what to try next: a refreshed token (or
   * the one another caller got meanwhile), `expired` when the grant is gone, or for stored static
   * headers `expired` saying to store new ones.
   */
  async rejected({
    server,
    userId,
    headers,
  }: {
    server: { name: string; url: string };
    userId: string;
    headers: Record<string, string>;
  }): Promise<ResolvedCredentials> {
    const secret = await this.store.reveal(userId, server.name);
    if (secret?.kind === 'headers') {
      if (!sameOrigin(secret.url, server.url)) return moved(server.name);
      if (!sameHeaders(secret.headers, headers)) return { kind: 'headers', headers: { ...secret.headers } };
      return {
        kind: 'expired',
        message: `MCP server "${server.name}" refused the headers you stored: store new ones with gateway.setCredentials({ server: "${server.name}", headers }), or call gateway.connect({ server: "${server.name}" }) to sign in there`,
      };
    }
    if (secret?.kind !== 'oauth' || !resourceCovers(secret.resource, server.url)) return this.resolve({ server, userId });
    const refused = headers.authorization?.replace(/^Bearer\s+/i, '');
    if (!refused || secret.accessToken !== refused) return this.resolve({ server, userId });
    return this.refreshOnce(userId, server.name, refused);
  }

  /** One refresh per user and server in this process; callers meanwhile share its result. */
  private refreshOnce(userId: string, serverName: string, refused?: string): Promise<ResolvedCredentials> {
    const key = `${userId}\0${serverName}`;
    let running = this.refreshing.get(key);
    if (!running) {
      running = this.refresh(userId, serverName, refused).finally(() => this.refreshing.delete(key));
      this.refreshing.set(key, running);
    }
    return running;
  }

  /** Due for a refresh: expiring soon, or the very token an upstream refused. */
  private needsRefresh(grant: OAuthGrant, refused?: string): boolean {
    if (refused !== undefined && grant.accessToken === refused) return true;
    if (grant.expiresAt === undefined) return false;
    // Early by the skew, but never by more than half the token's lifetime (short-lived tokens).
    const early = Math.min(this.skewMs, (grant.expiresAt - grant.obtainedAt) / 2);
    return grant.expiresAt - early <= this.now();
  }

  /** Refresh under a stored lock, so that instances do not spend one rotating refresh token twice. */
  private async refresh(userId: string, serverName: string, refused?: string): Promise<ResolvedCredentials> {
    const lock = `gwlock:${encodeURIComponent(userId)}:${serverName}`;
    const owner = `${process.pid}:${Math.random()}`;
    const server = this.servers(serverName);
    const net = netOf(server);
    const deadline = this.now() + net.timeoutMs;
    while (!(await this.storage.compareAndSet(lock, undefined, owner, { ttlMs: net.timeoutMs + 1000 }))) {
      // Another instance is refreshing: take its result once stored.
      await new Promise((r) => setTimeout(r, WAIT_STEP_MS));
      const now = await this.store.reveal(userId, serverName);
      if (now?.kind !== 'oauth') return this.resolve({ server: { name: serverName, url: server.url }, userId });
      if (!this.needsRefresh(now, refused)) return bearer(now);
      if (this.now() > deadline) break;
    }
    try {
      // Re-read under the lock: the grant may have been refreshed (or deleted) meanwhile.
      const grant = await this.store.reveal(userId, serverName);
      if (grant?.kind !== 'oauth') return this.resolve({ server: { name: serverName, url: server.url }, userId });
      if (!this.needsRefresh(grant, refused)) return bearer(grant);
      if (!grant.refreshToken) return expired(serverName, refused ? 'was refused by the server' : 'has expired');
      const answer = await tokenRequest(
        grant.tokenEndpoint,
        grant,
        { grant_type: 'refresh_token', refresh_token: grant.refreshToken, resource: grant.resource },
        net,
        this.now(),
      );
      if (!answer.ok) {
        this.logger.info('gateway: upstream grant refused on refresh', { userId, server: serverName });
        return expired(serverName, 'has expired or was revoked');
      }
      // A rotated refresh token replaces the old one; without one in the answer the old one stays good.
      const next: OAuthGrant = { ...grant, ...answer.tokens, refreshToken: answer.tokens.refreshToken ?? grant.refreshToken };
      if (!answer.tokens.expiresAt) delete next.expiresAt;
      await this.store.put(userId, serverName, next);
      return bearer(next);
    } finally {
      if ((await this.storage.get(lock)) === owner) await this.storage.delete(lock);
    }
  }
}

/** Stored headers' URL and the server's now: the same origin (records without a URL predate the binding). */
function sameOrigin(stored: string | undefined, now: string): boolean {
  if (stored === undefined) return true;
  try {
    return new URL(stored).origin === new URL(now).origin;
  } catch {
    return false;
  }
}

function moved(server: string): ResolvedCredentials {
  return {
    kind: 'expired',
    message: `MCP server "${server}" has moved to another address since you stored your headers, and they are not sent there: store them again with gateway.setCredentials({ server: "${server}", headers }) if they are meant for it`,
  };
}

function sameHeaders(a: Record<string, string>, b: Record<string, string>): boolean {
  const lower = (h: Record<string, string>) =>
    JSON.stringify(
      Object.entries(h)
        .map(([k, v]) => [k.toLowerCase(), v])
        .sort(([x], [y]) => (x! < y! ? -1 : 1)),
    );
  return lower(a) === lower(b);
}

function bearer(grant: OAuthGrant): ResolvedCredentials {
  return { kind: 'headers', headers: { authorization: `Bearer ${grant.accessToken}` } };
}

function expired(server: string, why: string): ResolvedCredentials {
  return {
    kind: 'expired',
    message: `your authorization for MCP server "${server}" ${why}: call gateway.connect({ server: "${server}" }) and open the URL it returns to sign in again`,
  };
}
