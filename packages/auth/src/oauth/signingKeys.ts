import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { SessionStore } from './sessionStore.js';

export type SigningAlg = 'ES256' | 'RS256';

/** One key of the set as stored: the public half in clear, the private half sealed. */
interface StoredKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  sealedPrivate: string;
  createdAt: number;
  /** When a newer key took over; the key stays published until its last tokens expire. */
  retiredAt?: number;
}

interface KeySetDoc {
  keys: StoredKey[];
}

export interface SigningKeysOptions {
  alg: SigningAlg;
  /** Age after which the current key is replaced, in ms. */
  rotateAfterMs: number;
  /** How long a retired key stays published and trusted, in ms (the access-token lifetime plus slack). */
  retainMs: number;
}

const KEYSET_KEY = 'oauth:signing-keys';
/** Re-read the set this often, to pick up another instance's rotation. */
const RELOAD_MS = 5 * 60_000;
/** An unknown kid triggers a reload at most this often. */
const MISS_RELOAD_MS = 5_000;

/**
 * The authorization server's own signing keys (ES256 or RS256), persisted in storage so a
 * restart or a second instance keeps tokens valid. Private keys are sealed with the encryption
 * key. Public keys are stored in clear: after an encryption-key change the old public keys
 * still verify old tokens, whose sessions then fail to open, so they are refused as
 * "session not found" rather than as a bad signature.
 */
export class SigningKeys {
  private current: { kid: string; alg: SigningAlg; key: CryptoKey } | undefined;
  private verifiers = new Map<string, { alg: SigningAlg; key: CryptoKey }>();
  private published: JWK[] = [];
  private loadedAt = 0;
  private lastMissReload = 0;
  private loading: Promise<void> | undefined;

  private constructor(
    private readonly store: SessionStore,
    private readonly opts: SigningKeysOptions,
  ) {}

  static async open(store: SessionStore, opts: SigningKeysOptions): Promise<SigningKeys> {
    const keys = new SigningKeys(store, opts);
    await keys.reload();
    return keys;
  }

  /** The key new tokens are signed with. */
  async signingKey(): Promise<{ kid: string; alg: SigningAlg; key: CryptoKey }> {
    if (!this.current || Date.now() - this.loadedAt > RELOAD_MS) await this.reload();
    return this.current!;
  }

  /** The public key for a token's kid; an unknown kid reloads the set once in a while. */
  async verificationKey(kid: string): Promise<{ alg: SigningAlg; key: CryptoKey } | undefined> {
    const found = this.verifiers.get(kid);
    if (found) return found;
    if (Date.now() - this.lastMissReload < MISS_RELOAD_MS) return undefined;
    this.lastMissReload = Date.now();
    await this.reload();
    return this.verifiers.get(kid);
  }

  /** The JWK Set served at /.well-known/jwks.json: the current key and retired ones still trusted. */
  jwks(): { keys: JWK[] } {
    return { keys: this.published };
  }

  /** Replace the current key now (the old one stays published). Returns the new kid. */
  async rotate(): Promise<string> {
    await this.reload(true);
    return this.current!.kid;
  }

  private reload(forceRotate = false): Promise<void> {
    // Concurrent callers share one load; a forced rotation queues behind it.
    if (this.loading && !forceRotate) return this.loading;
    const run = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        if (await this.loadOnce(forceRotate && attempt === 0 ? 'rotate' : 'normal')) return;
      }
      throw new Error('could not store the signing key set (concurrent writers)');
    };
    const next = (this.loading ?? Promise.resolve()).catch(() => undefined).then(run);
    this.loading = next;
    next
      .finally(() => {
        if (this.loading === next) this.loading = undefined;
      })
      .catch(() => undefined);
    return next;
  }

  /** One read-modify-write of the key set; false when another writer got there first. */
  private async loadOnce(mode: 'normal' | 'rotate'): Promise<boolean> {
    const storage = this.store.storage;
    const raw = await storage.get<KeySetDoc>(KEYSET_KEY);
    const now = Date.now();
    // A copy: `raw` must stay as read, it is the compare-and-set expectation.
    const keys = structuredClone(raw?.keys ?? []).filter((k) => k.retiredAt === undefined || now - k.retiredAt < this.opts.retainMs);

    let current: { stored: StoredKey; key: CryptoKey } | undefined;
    if (mode === 'normal') {
      const candidate = keys.find((k) => k.retiredAt === undefined && k.alg === this.opts.alg);
      if (candidate && now - candidate.createdAt < this.opts.rotateAfterMs) {
        const jwk = this.store.open<JWK>(candidate.sealedPrivate, `oauth:signing-key:${candidate.kid}`);
        if (jwk) current = { stored: candidate, key: (await importJWK(jwk, candidate.alg)) as CryptoKey };
      }
    }

    if (!current) {
      const created = await this.generate(now);
      for (const k of keys) k.retiredAt ??= now;
      keys.unshift(created.stored);
      // Written only if nobody changed the set meanwhile; otherwise the caller reads again.
      if (!(await storage.compareAndSet(KEYSET_KEY, raw, { keys } satisfies KeySetDoc))) return false;
      current = created;
    }

    const verifiers = new Map<string, { alg: SigningAlg; key: CryptoKey }>();
    for (const k of keys) verifiers.set(k.kid, { alg: k.alg, key: (await importJWK(k.publicJwk, k.alg)) as CryptoKey });
    this.verifiers = verifiers;
    this.published = keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: k.alg, use: 'sig' }));
    this.current = { kid: current.stored.kid, alg: current.stored.alg, key: current.key };
    this.loadedAt = now;
    return true;
  }

  private async generate(now: number): Promise<{ stored: StoredKey; key: CryptoKey }> {
    const alg = this.opts.alg;
    const pair = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
    const publicJwk = await exportJWK(pair.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const sealedPrivate = this.store.seal(await exportJWK(pair.privateKey), `oauth:signing-key:${kid}`);
    return { stored: { kid, alg, publicJwk, sealedPrivate, createdAt: now }, key: pair.privateKey };
  }
}
