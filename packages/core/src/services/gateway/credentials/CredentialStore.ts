import { CoreError } from '../../../kernel/CoreError.js';
import type { Logger } from '../../../kernel/Logger.js';
import type { Storage } from '../../../kernel/Storage.js';
import { deriveKey, open, seal, type DerivedKey, type Sealed } from '../../vault/vaultCrypto.js';

/** A user's OAuth grant at one upstream, with what a refresh needs (no rediscovery). */
export interface OAuthGrant {
  kind: 'oauth';
  accessToken: string;
  refreshToken?: string;
  /** Epoch ms; absent when the authorization server gave no `expires_in`. */
  expiresAt?: number;
  obtainedAt: number;
  scope?: string;
  issuer: string;
  tokenEndpoint: string;
  /** The RFC 8707 resource the grant is for: its tokens are only ever sent to URLs under it. */
  resource: string;
  clientId: string;
  clientSecret?: string;
  tokenEndpointAuthMethod: string;
  revocationEndpoint?: string;
}

/** Static headers a user stored for one upstream (gateway.setCredentials). */
export interface HeaderCredentials {
  kind: 'headers';
  headers: Record<string, string>;
  /**
   * The server's URL when they were stored: they are only sent to that origin (a server pointed
   * elsewhere since needs them stored again). Absent in records stored before this was kept.
   */
  url?: string;
}

export type UpstreamSecret = OAuthGrant | HeaderCredentials;

/** What is stored: ciphertext, plus what may be shown (the kind, the header names, times). */
interface StoredSecret extends Sealed {
  v: 1;
  kind: UpstreamSecret['kind'];
  headerNames?: string[];
  createdAt: string;
  updatedAt: string;
}

/** What a user may see of their stored credentials: never a value. */
export interface CredentialStatus {
  server: string;
  exists: boolean;
  kind?: UpstreamSecret['kind'];
  headerNames?: string[];
  createdAt?: string;
  updatedAt?: string;
}

const PREFIX = 'gwcred:';
const slot = (userId: string, server: string) => `${PREFIX}${encodeURIComponent(userId)}:${server}`;
// Binds each ciphertext to its owner and server: a record copied to another slot does not open.
const aad = (userId: string, server: string) => `gateway-cred:v1:${userId}:${server}`;

export interface CredentialStoreOptions {
  /** The vault's master secret (billing.vaultKey, else oauth.encryptionKey). */
  masterKey?: string;
  /** Earlier master secrets, still accepted for reading. */
  previousKeys?: string[];
}

/**
 * Per-user upstream credentials encrypted at rest, like BYOK keys (the same master secret,
 * AES-256-GCM, HKDF key, key id per record) but in their own slots, so they never show in the
 * BYOK listings.
 */
export class CredentialStore {
  private readonly current: DerivedKey | undefined;
  private readonly byKid = new Map<string, DerivedKey>();

  constructor(
    private readonly storage: Storage,
    opts: CredentialStoreOptions,
    private readonly logger?: Logger,
  ) {
    this.current = opts.masterKey ? deriveKey(opts.masterKey) : undefined;
    for (const k of [this.current, ...(opts.previousKeys ?? []).map(deriveKey)]) if (k) this.byKid.set(k.kid, k);
  }

  get configured(): boolean {
    return this.current !== undefined;
  }

  /** Throws NOT_CONFIGURED when there is no master secret to encrypt with. */
  assertConfigured(): void {
    this.key();
  }

  private key(): DerivedKey {
    if (!this.current)
      throw new CoreError(
        'NOT_CONFIGURED',
        'per-user upstream credentials need the key vault: set billing.vaultKey or oauth.encryptionKey',
      );
    return this.current;
  }

  async put(userId: string, server: string, secret: UpstreamSecret): Promise<CredentialStatus> {
    const key = slot(userId, server);
    const old = await this.storage.get<StoredSecret>(key);
    const now = new Date().toISOString();
    const record: StoredSecret = {
      v: 1,
      ...seal(this.key(), JSON.stringify(secret), aad(userId, server)),
      kind: secret.kind,
      ...(secret.kind === 'headers' ? { headerNames: Object.keys(secret.headers).sort() } : {}),
      createdAt: old?.createdAt ?? now,
      updatedAt: now,
    };
    await this.storage.set(key, record);
    return status(server, record);
  }

  async status(userId: string, server: string): Promise<CredentialStatus> {
    return status(server, await this.storage.get<StoredSecret>(slot(userId, server)));
  }

  async remove(userId: string, server: string): Promise<boolean> {
    return this.storage.delete(slot(userId, server));
  }

  /** The decrypted credentials, for the gateway's own upstream requests only. */
  async reveal(userId: string, server: string): Promise<UpstreamSecret | undefined> {
    const r = await this.storage.get<StoredSecret>(slot(userId, server));
    if (!r) return undefined;
    const k = this.byKid.get(r.kid);
    if (!k) {
      this.logger?.error('gateway: stored credentials were sealed with an unknown master key', { userId, server, kid: r.kid });
      throw new CoreError('INTERNAL', 'the stored upstream credentials cannot be decrypted: their master key is not configured');
    }
    try {
      return JSON.parse(open(k, r, aad(userId, server))) as UpstreamSecret;
    } catch {
      this.logger?.error('gateway: stored credentials failed authentication', { userId, server, kid: r.kid });
      throw new CoreError('INTERNAL', 'the stored upstream credentials cannot be decrypted');
    }
  }

  /** Seal any other secret (a dynamic registration's client secret, a pending authorization). */
  sealValue(value: unknown, binding: string): Sealed {
    return seal(this.key(), JSON.stringify(value), `gateway-value:v1:${binding}`);
  }

  openValue<T>(sealed: Sealed, binding: string): T | undefined {
    const k = this.byKid.get(sealed.kid);
    if (!k) return undefined;
    try {
      return JSON.parse(open(k, sealed, `gateway-value:v1:${binding}`)) as T;
    } catch {
      return undefined;
    }
  }
}

function status(server: string, r: StoredSecret | undefined): CredentialStatus {
  if (!r) return { server, exists: false };
  return {
    server,
    exists: true,
    kind: r.kind,
    ...(r.headerNames ? { headerNames: r.headerNames } : {}),
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
