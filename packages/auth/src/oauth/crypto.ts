import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256 } from '@ai-backend/core/internal';

export { sha256 };

/** A random, URL-safe secret: 32 bytes (256 bits) of entropy unless told otherwise. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Constant-time string comparison (lengths may leak, contents do not). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** PKCE S256 (RFC 7636 §4.2): BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceChallenge(verifier: string): string {
  return sha256(verifier);
}

/** RFC 7636 §4.1: 43 to 128 characters from the unreserved set. */
export const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A S256 challenge is a base64url sha256: 43 characters. */
export const PKCE_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;
