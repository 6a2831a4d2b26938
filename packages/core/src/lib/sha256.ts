import * as crypto from 'node:crypto';

type Encoding = 'hex' | 'base64url';

/**
 * SHA-256 of a string (UTF-8), hex or base64url. `crypto.hash` (Node 20.12+) is one call with no
 * Hash object, whose making cost more than the digest of a short text (a bearer token, a stored
 * row); Node 20.11, which `engines` still admits, has only createHash. Chosen once, at load.
 * Used where a hash is taken per request: the verified-token cache's key and the OAuth server's
 * stored codes and secrets (base64url), PostgreSQL's check of a planned-on row (hex, as the
 * `aib_tx` function computes it).
 */
export const sha256: (value: string, encoding?: Encoding) => string = crypto.hash
  ? (value, encoding = 'base64url') => crypto.hash('sha256', value, encoding)
  : (value, encoding = 'base64url') => crypto.createHash('sha256').update(value, 'utf8').digest(encoding);
