import {
  createStorage,
  requestClientIp,
  isCoreError,
  publicBaseUrl,
  type Logger,
  type Runtime,
  type Signals,
  type Storage,
} from '@ai-backend/core/internal';
import type { Context } from 'hono';
import { AccessTokens } from './accessTokens.js';
import { ClientIdMetadataDocuments, isUrlClientId } from './clientIdMetadata.js';
import type { ClientRecord } from './records.js';
import type { OAuthSettings } from './oauthSettings.js';
import { SESSION_REVOKED, SessionStore } from './sessionStore.js';
import { SigningKeys } from './signingKeys.js';
import { UpstreamProvider } from './upstreamProvider.js';

export type ClientLookup = { client: ClientRecord; problem?: undefined } | { client?: undefined; problem: string };

/**
 * What the authorization server uses of the server it runs in: the config (settings, public URL),
 * a log, the store its sessions share by default, and the signals a revoked session is announced on.
 */
export type OAuthServerDeps = Pick<Runtime, 'config' | 'logger' | 'storage' | 'signals'>;

/** What every endpoint of the authorization server works with. */
export interface OAuthServices {
  readonly settings: OAuthSettings;
  /** Cross-instance signals: a revoked session is forgotten by every instance's token cache. */
  readonly signals: Signals;
  readonly logger: Logger;
  readonly store: SessionStore;
  readonly keys: SigningKeys;
  readonly tokens: AccessTokens;
  readonly upstream: UpstreamProvider;
  /** Client ID Metadata Documents (URL client_ids). */
  readonly metadataDocuments: ClientIdMetadataDocuments;
  /**
   * The client a client_id names: a registered one, or, for an https URL, the one its metadata
   * document describes. `problem` says why there is none (safe to show).
   */
  findClient(clientId: string): Promise<ClientLookup>;
  /** The public base URL for this request (publicUrl, else the request; forwarded headers only with trustProxy). */
  baseUrl(c: Context): string;
  /** The client address for rate limiting. */
  clientIp(c: Context): string;
}

export interface OpenServicesOptions {
  /** Use this storage for sessions instead of `oauth.sessionStorage` / the runtime's storage. */
  storage?: Storage;
  clientIp?: (c: Context) => string;
}

/** Default client address: core's one rule (X-Forwarded-For only with trustProxy, else the socket). */
function defaultClientIp(trustProxy: boolean): (c: Context) => string {
  return (c) => requestClientIp(c.req.header('x-forwarded-for'), c.env, trustProxy);
}

/** Open session storage and signing keys. Returns the services and what closes them. */
export async function openOAuthServices(
  deps: OAuthServerDeps,
  settings: OAuthSettings,
  opts: OpenServicesOptions,
): Promise<{ services: OAuthServices; close: () => Promise<void> }> {
  // Sessions get their own backend when configured; otherwise they share the server's. Their own
  // Redis emptied (no persistence, a flush) costs every client a new sign-in, not money: it is
  // started afresh, not refused for good as the money store would be.
  const own = !opts.storage && settings.storage ? await createStorage(settings.storage, { holds: 'shared' }) : undefined;
  const storage = opts.storage ?? own ?? deps.storage;
  try {
    const store = new SessionStore(storage, settings.encryptionKey);
    const keys = await SigningKeys.open(store, {
      alg: settings.signingAlg,
      rotateAfterMs: settings.signingKeyRotationDays * 86_400_000,
      retainMs: (settings.accessTokenTtlSec + 300) * 1000,
    });
    const metadataDocuments = new ClientIdMetadataDocuments(settings.clientIdMetadataDocuments);
    const services: OAuthServices = {
      metadataDocuments,
      async findClient(clientId) {
        if (isUrlClientId(clientId)) {
          try {
            return { client: await metadataDocuments.resolve(clientId) };
          } catch (err) {
            if (isCoreError(err) && err.appCode === 'BAD_REQUEST') {
              deps.logger.info('client metadata document refused', {
                event: 'cimd_refused',
                clientId: clientId.slice(0, 200),
                error: err.message,
              });
              return { problem: err.message };
            }
            throw err;
          }
        }
        const client = await store.get<ClientRecord>('client', clientId);
        return client ? { client } : { problem: 'unknown client' };
      },
      settings,
      signals: deps.signals,
      logger: deps.logger,
      store,
      keys,
      tokens: new AccessTokens(keys, store, settings),
      upstream: new UpstreamProvider({
        provider: settings.provider,
        clientId: settings.providerClientId,
        clientSecret: settings.providerClientSecret,
      }),
      baseUrl: (c) => publicBaseUrl(c.req.url, c.req.raw.headers, deps.config),
      clientIp: opts.clientIp ?? defaultClientIp(settings.trustProxy),
    };
    const unsubscribe = deps.signals.subscribe(SESSION_REVOKED, (sid) => services.tokens.forget(sid));
    return {
      services,
      close: async () => {
        unsubscribe();
        await own?.close();
      },
    };
  } catch (err) {
    await own?.close();
    throw err;
  }
}
