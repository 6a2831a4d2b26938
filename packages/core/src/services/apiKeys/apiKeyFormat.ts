import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthFacts, AuthResult, Authenticator } from '../../kernel/identity.js';

/**
 * The shape of an API key: `aib_` + 12-character id + 32-character secret + 6-character checksum,
 * all base62 (54 characters, matched by {@link API_KEY_PATTERN}).
 *
 * - The id names the stored record (`apikey:<id>`); its last 4 characters are a tag made with the
 *   server's secret, so a key minted by another deployment (or guessed) is refused before any
 *   store lookup.
 * - The checksum is CRC-32 of everything before it, as GitHub's tokens do: a secret scanner can
 *   tell a real key from random text without asking us, and a mistyped or truncated key is
 *   refused locally.
 * - The secret part carries 190 bits of randomness; the store keeps only HMAC-SHA256(secret, key).
 */
export const API_KEY_PREFIX = 'aib_';
export const API_KEY_PATTERN = /^aib_[0-9A-Za-z]{50}$/;
const ID_RANDOM = 8;
const ID_TAG = 4;
export const ID_LENGTH = ID_RANDOM + ID_TAG;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 characters (rejection sampling, so no character is likelier than another). */
function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out += ALPHABET[b % 62];
    }
  }
  return out;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE) of an ASCII string. */
export function crc32(s: string): number {
  let c = 0xffffffff;
  for (let i = 0; i < s.length; i++) c = CRC_TABLE[(c ^ s.charCodeAt(i)) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const checksumOf = (body: string) => base62(crc32(body), CHECKSUM_LENGTH);

/** Keyed operations of one server secret: the id tag and the stored hash. */
export class ApiKeyHasher {
  constructor(private readonly secret: Buffer) {}

  private tagOf(random: string): string {
    const mac = createHmac('sha256', this.secret).update(`tag:${random}`).digest();
    return base62(mac.readUInt32BE(0), ID_TAG);
  }

  /** HMAC-SHA256 of the whole key, base64url: the only form a key is stored in. */
  hash(key: string): string {
    return createHmac('sha256', this.secret).update(`key:${key}`).digest('base64url');
  }

  /** Constant-time comparison of a presented key with a stored hash. */
  matches(key: string, storedHash: string): boolean {
    const a = Buffer.from(this.hash(key));
    const b = Buffer.from(storedHash);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** A new key and its id. */
  mint(): { key: string; id: string } {
    const random = randomBase62(ID_RANDOM);
    const id = random + this.tagOf(random);
    const body = `${API_KEY_PREFIX}${id}${randomBase62(SECRET_LENGTH)}`;
    return { key: body + checksumOf(body), id };
  }

  /**
   * The id of a well-formed key of this server, or null: wrong prefix, length or alphabet, a bad
   * checksum (typo, truncation), or an id tag another secret made. Pure: no store access.
   */
  parse(token: string): string | null {
    if (token.length !== 54 || !API_KEY_PATTERN.test(token)) return null;
    const body = token.slice(0, -CHECKSUM_LENGTH);
    if (checksumOf(body) !== token.slice(-CHECKSUM_LENGTH)) return null;
    const id = token.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + ID_LENGTH);
    const a = Buffer.from(this.tagOf(id.slice(0, ID_RANDOM)));
    const b = Buffer.from(id.slice(ID_RANDOM));
    return timingSafeEqual(a, b) ? id : null;
  }
}

/** Looks like one of our keys (prefix only): such a token is never handed to the JWT verifier. */
export const isApiKeyLike = (token: string) => token.startsWith(API_KEY_PREFIX);

/**
 * The one point where every entry point's credential is recognised (the runtime's `authenticate`):
 * a token with our keys' prefix goes to the key store and never to the JWT/OAuth verifier; any
 * other token goes to `tokens` and never reaches the key store.
 */
export function bearerAuthenticator(
  keys: { authenticate(token: string, ip?: string): Promise<AuthResult> },
  tokens: Authenticator,
): (token: string, facts?: AuthFacts) => Promise<AuthResult> {
  return (token, facts) => (isApiKeyLike(token) ? keys.authenticate(token, facts?.ip) : tokens(token, facts));
}

/** What may be shown of a key after creation: its prefix and id, never the secret part. */
export const displayPrefix = (id: string) => `${API_KEY_PREFIX}${id}`;
