import * as crypto from 'node:crypto';

/**
 * sha256 as base64url: how the OAuth server stores codes, refresh tokens and client secrets (never
 * in clear), and the key of the verified-token cache (which never holds a bearer token).
 * `crypto.hash` (Node 20.12+) is one call with no Hash object, whose creation cost more than the
 * digest of a token; Node 20.11, which `engines` still admits, has only createHash.
 */
export const sha256: (value: string) => string = crypto.hash
  ? (value) => crypto.hash('sha256', value, 'base64url')
  : (value) => crypto.createHash('sha256').update(value).digest('base64url');
