import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Storage } from '@ai-backend/core';

/** Signal topic of a revoked OAuth session (core's, so that streams opened with it end too); the message is its sid. */
export { SESSION_REVOKED } from '@ai-backend/core/internal';

/** Every record kind the authorization server keeps, and its storage key prefix. */
export type RecordKind = 'client' | 'pending' | 'upstream' | 'code' | 'refresh' | 'session';

/** Every stored record carries its own expiry (ms since epoch) so a coarse backend TTL cannot extend it. */
export interface Expiring {
  exp: number;
}

/** Result of consuming a single-use record (authorization code, refresh token). */
export type Consumed<T> =
  | { status: 'ok'; value: T }
  /** Already used once: the caller revokes whatever was issued from it. */
  | { status: 'reused'; value: T }
  | { status: 'missing' };

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypted records in a core Storage. Values are sealed with AES-256-GCM under a key derived
 * from `oauth.encryptionKey` with HKDF-SHA256; the storage key is the additional authenticated
 * data, so a record copied under another key does not open. A record that does not open
 * (changed encryption key, tampering) reads as absent: the caller reports "session not found".
 */
export class SessionStore {
  private readonly key: Buffer;

  constructor(
    readonly storage: Storage,
    encryptionKey: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', encryptionKey, 'ai-backend/oauth', 'record-encryption-v1', 32));
  }

  /** Seal any JSON value; `aad` binds the ciphertext to where it is stored. */
  seal(value: unknown, aad: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${Buffer.concat([iv, body]).toString('base64url')}`;
  }

  /** Open a sealed value; undefined when it was sealed under another key or altered. */
  open<T>(sealed: unknown, aad: string): T | undefined {
    if (typeof sealed !== 'string' || !sealed.startsWith(`${VERSION}.`)) return undefined;
    const raw = Buffer.from(sealed.slice(VERSION.length + 1), 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(aad));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as T;
    } catch {
      return undefined;
    }
  }

  private storageKey(kind: RecordKind, id: string): string {
    return `oauth:${kind}:${id}`;
  }

  async put<T extends Expiring>(kind: RecordKind, id: string, value: T): Promise<void> {
    const key = this.storageKey(kind, id);
    await this.storage.set(key, this.seal(value, key), { ttlMs: Math.max(1, value.exp - Date.now()) });
  }

  async get<T extends Expiring>(kind: RecordKind, id: string): Promise<T | undefined> {
    const key = this.storageKey(kind, id);
    const value = this.open<T>(await this.storage.get(key), key);
    return value && value.exp > Date.now() ? value : undefined;
  }

  /**
   * Replace a record with `change(current)` only while it is still there, unchanged since read
   * (compareAndSet on the sealed value): undefined, nothing written, when it is absent or expired,
   * or when it kept changing under three tries. So a write of a record read before a concurrent
   * delete (a session revoked meanwhile) never brings it back.
   */
  async update<T extends Expiring>(kind: RecordKind, id: string, change: (current: T) => T): Promise<T | undefined> {
    const key = this.storageKey(kind, id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const sealed = await this.storage.get<string>(key);
      const current = this.open<T>(sealed, key);
      if (!current || current.exp <= Date.now()) return undefined;
      const next = change(current);
      if (await this.storage.compareAndSet(key, sealed, this.seal(next, key), { ttlMs: Math.max(1, next.exp - Date.now()) })) return next;
    }
    return undefined;
  }

  async delete(kind: RecordKind, id: string): Promise<boolean> {
    return this.storage.delete(this.storageKey(kind, id));
  }

  /**
   * Take a single-use record that needs no reuse detection (consent requests, upstream state):
   * of two concurrent takers only the one whose delete succeeds gets the value.
   */
  async take<T extends Expiring>(kind: RecordKind, id: string): Promise<T | undefined> {
    const value = await this.get<T>(kind, id);
    if (!value) return undefined;
    return (await this.delete(kind, id)) ? value : undefined;
  }

  /**
   * Use a single-use record once and remember that it was used until it expires, so a second
   * presentation is told apart from an unknown value (OAuth 2.1 §4.1.2 and §4.3.1: reuse revokes).
   * Atomic across instances through compareAndSet on the sealed value.
   */
  async consume<T extends Expiring & { usedAt?: number }>(kind: RecordKind, id: string): Promise<Consumed<T>> {
    const key = this.storageKey(kind, id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const sealed = await this.storage.get<string>(key);
      const value = this.open<T>(sealed, key);
      if (!value || value.exp <= Date.now()) return { status: 'missing' };
      if (value.usedAt !== undefined) return { status: 'reused', value };
      const used = this.seal({ ...value, usedAt: Date.now() }, key);
      if (await this.storage.compareAndSet(key, sealed, used, { ttlMs: Math.max(1, value.exp - Date.now()) })) {
        return { status: 'ok', value };
      }
      // Lost a race with another consumer: read again, which now reports reuse.
    }
    return { status: 'missing' };
  }
}
