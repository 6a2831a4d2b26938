import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const SALT = 'ai-backend/byok-vault';
const KEY_INFO = 'aes-256-gcm key v1';
const KID_INFO = 'key id v1';

/** A data key derived from a master secret, with the id stored next to each ciphertext. */
export interface DerivedKey {
  /** 16 hex characters; identifies the master secret without revealing it. */
  kid: string;
  key: Buffer;
}

/** HKDF-SHA256 from the configured master secret: one AES-256 key and its id. */
export function deriveKey(master: string): DerivedKey {
  const key = Buffer.from(hkdfSync('sha256', master, SALT, KEY_INFO, 32));
  const kid = Buffer.from(hkdfSync('sha256', master, SALT, KID_INFO, 8)).toString('hex');
  return { kid, key };
}

export interface Sealed {
  kid: string;
  /** base64url: 12-byte nonce, ciphertext, 16-byte tag. */
  iv: string;
  ct: string;
  tag: string;
}

/** AES-256-GCM with a fresh random nonce; `aad` binds the ciphertext to its owner and slot. */
export function seal(k: DerivedKey, plaintext: string, aad: string): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', k.key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { kid: k.kid, iv: iv.toString('base64url'), ct: ct.toString('base64url'), tag: cipher.getAuthTag().toString('base64url') };
}

/** Throws when the tag does not verify (wrong key, tampered data, or data moved to another slot). */
export function open(k: DerivedKey, sealed: Sealed, aad: string): string {
  const decipher = createDecipheriv('aes-256-gcm', k.key, Buffer.from(sealed.iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString('utf8');
}
