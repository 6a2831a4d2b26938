import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import { OWNER_LISTED } from '../../kernel/ownerListings.js';
import { deriveKey, open, seal, type DerivedKey, type Sealed } from './vaultCrypto.js';

export interface KeyVaultOptions {
  /** Current master secret (billing.vaultKey, else oauth.encryptionKey). Without it nothing can be stored. */
  masterKey?: string;
  /** Earlier master secrets, still accepted for reading until `rotateMasterKey` re-encrypts. */
  previousKeys?: string[];
}

/** What is stored per user and provider: ciphertext only, plus the last four characters. */
interface StoredKey extends Sealed {
  v: 1;
  /** Null for keys shorter than 12 characters, where four characters would say too much. */
  last4: string | null;
  createdAt: string;
  rotatedAt?: string;
  validatedAt?: string;
}

/** Key status as shown to users: never the key. */
export interface KeyStatus {
  exists: boolean;
  provider: string;
  last4?: string | null;
  createdAt?: string;
  rotatedAt?: string;
  validatedAt?: string;
}

const PREFIX = OWNER_LISTED.vault;
/** Vault entries read per page by rotateMasterKey(). */
const ROTATE_PAGE = 200;
/** The row of a user's stored key for one provider (read by the metered call's decision, to know a key is there). */
export const vaultSlot = (userId: string, provider: string) => `${PREFIX}${encodeURIComponent(userId)}:${provider}`;
const slot = vaultSlot;
const aad = (userId: string, provider: string) => `byok:v1:${userId}:${provider}`;

/**
 * BYOK keys encrypted at rest (AES-256-GCM, key from HKDF over the master secret). Each record
 * carries the id of the key that sealed it, so the master secret can rotate: old records stay
 * readable through `previousKeys` and are re-sealed on read or by `rotateMasterKey`.
 */
export class KeyVault {
  private readonly current: DerivedKey | undefined;
  private readonly byKid = new Map<string, DerivedKey>();

  constructor(
    private readonly storage: Storage,
    opts: KeyVaultOptions,
    private readonly logger?: Logger,
  ) {
    this.current = opts.masterKey ? deriveKey(opts.masterKey) : undefined;
    for (const k of [this.current, ...(opts.previousKeys ?? []).map(deriveKey)]) if (k) this.byKid.set(k.kid, k);
  }

  get configured(): boolean {
    return this.current !== undefined;
  }

  private requireKey(): DerivedKey {
    if (!this.current) {
      throw new CoreError('NOT_CONFIGURED', 'BYOK key storage is not configured: set billing.vaultKey or oauth.encryptionKey');
    }
    return this.current;
  }

  private record(userId: string, provider: string, apiKey: string, times: Omit<StoredKey, keyof Sealed | 'v' | 'last4'>): StoredKey {
    const sealed = seal(this.requireKey(), apiKey, aad(userId, provider));
    return { v: 1, ...sealed, last4: apiKey.length >= 12 ? apiKey.slice(-4) : null, ...times };
  }

  private status(provider: string, r: StoredKey | undefined): KeyStatus {
    if (!r) return { exists: false, provider };
    return {
      exists: true,
      provider,
      last4: r.last4,
      createdAt: r.createdAt,
      ...(r.rotatedAt ? { rotatedAt: r.rotatedAt } : {}),
      ...(r.validatedAt ? { validatedAt: r.validatedAt } : {}),
    };
  }

  /** Store (or replace) a key. */
  async store(userId: string, provider: string, apiKey: string): Promise<KeyStatus> {
    const r = this.record(userId, provider, apiKey, { createdAt: new Date().toISOString() });
    await this.storage.set(slot(userId, provider), r);
    return this.status(provider, r);
  }

  /** Replace an existing key; NOT_FOUND when there is none. Clears the validation time. */
  async rotate(userId: string, provider: string, newApiKey: string): Promise<KeyStatus> {
    const old = await this.storage.get<StoredKey>(slot(userId, provider));
    if (!old) throw new CoreError('NOT_FOUND', `no ${provider} key is stored for this user`);
    const r = this.record(userId, provider, newApiKey, { createdAt: old.createdAt, rotatedAt: new Date().toISOString() });
    await this.storage.set(slot(userId, provider), r);
    return this.status(provider, r);
  }

  async get(userId: string, provider: string): Promise<KeyStatus> {
    return this.status(provider, await this.storage.get<StoredKey>(slot(userId, provider)));
  }

  async has(userId: string, provider: string): Promise<boolean> {
    return (await this.storage.get(slot(userId, provider))) !== undefined;
  }

  /** Providers with a stored key. */
  async providers(userId: string): Promise<string[]> {
    const prefix = `${PREFIX}${encodeURIComponent(userId)}:`;
    return (await this.storage.keys(prefix)).map((k) => k.slice(prefix.length)).sort();
  }

  async remove(userId: string, provider: string): Promise<boolean> {
    return this.storage.delete(slot(userId, provider));
  }

  async markValidated(userId: string, provider: string): Promise<KeyStatus> {
    const key = slot(userId, provider);
    const r = await this.storage.get<StoredKey>(key);
    if (!r) throw new CoreError('NOT_FOUND', `no ${provider} key is stored for this user`);
    const next = { ...r, validatedAt: new Date().toISOString() };
    // Only if unchanged meanwhile: a concurrent rotate must not be marked validated.
    await this.storage.compareAndSet(key, r, next);
    return this.status(provider, next);
  }

  /** The decrypted key, for the server's own upstream calls only. Never return it to a client. */
  async reveal(userId: string, provider: string): Promise<string | undefined> {
    return this.revealStored(userId, provider, await this.storage.get<StoredKey>(slot(userId, provider)));
  }

  /**
   * `reveal` of a record already read (the row at `vaultSlot(userId, provider)`, e.g. in a metered
   * call's hold transaction), without reading it again. Never return the key to a client.
   */
  async revealStored(userId: string, provider: string, stored: unknown): Promise<string | undefined> {
    const key = slot(userId, provider);
    const r = stored as StoredKey | undefined;
    if (!r) return undefined;
    const k = this.byKid.get(r.kid);
    if (!k) {
      this.logger?.error('vault: stored key was sealed with an unknown master key', { userId, provider, kid: r.kid });
      throw new CoreError('INTERNAL', 'the stored key cannot be decrypted: its master key is not configured');
    }
    let plain: string;
    try {
      plain = open(k, r, aad(userId, provider));
    } catch {
      this.logger?.error('vault: stored key failed authentication', { userId, provider, kid: r.kid });
      throw new CoreError('INTERNAL', 'the stored key cannot be decrypted');
    }
    if (this.current && r.kid !== this.current.kid) {
      // Lazy re-encryption under the current master key; skipped if the record changed meanwhile.
      const { last4: _l, v: _v, kid: _k, iv: _i, ct: _c, tag: _t, ...times } = r;
      await this.storage.compareAndSet(key, r, this.record(userId, provider, plain, times));
    }
    return plain;
  }

  /** Re-seal every record not under the current master key. Returns how many were rewritten. */
  async rotateMasterKey(): Promise<{ rewritten: number; failed: number }> {
    const current = this.requireKey();
    let rewritten = 0;
    let failed = 0;
    // A page of keys at a time (every user's stored keys: a set that grows with the users).
    let cursor: string | undefined;
    do {
      const page = await this.storage.listKeys(PREFIX, { cursor, limit: ROTATE_PAGE });
      const records = await this.storage.getMany<StoredKey>(page.keys);
      for (const [i, key] of page.keys.entries()) {
        const r = records[i];
        if (!r || r.kid === current.kid) continue;
        const [user, provider] = key.slice(PREFIX.length).split(':') as [string, string];
        try {
          await this.reveal(decodeURIComponent(user), provider);
          rewritten++;
        } catch {
          failed++;
        }
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    return { rewritten, failed };
  }
}
