import { CoreError } from '@ai-backend/core';

/**
 * Longest bearer token we look at. Our own tokens are well under 2 KB; anything past this is
 * refused before any base64 or JSON parsing, so a hostile client cannot make us decode megabytes.
 */
export const MAX_TOKEN_LENGTH = 8 * 1024;

/** What we read from a JWS protected header before choosing a verifier. */
export interface TokenHeader {
  alg: string;
  kid?: string;
  typ?: string;
}

/**
 * Header parameters that carry or point to a key, or change how the token must be processed.
 * We never take a key from the token itself (RFC 8725 §3.10): a token naming its own key
 * (jwk, x5c) or a place to fetch it (jku, x5u) is refused outright rather than ignored, and
 * `crit`/`b64` (RFC 7797 unencoded payloads) and JWE parameters have no business in our tokens.
 */
const FORBIDDEN_HEADER_PARAMS = ['jwk', 'jku', 'x5u', 'x5c', 'x5t', 'x5t#S256', 'crit', 'b64', 'enc', 'zip', 'epk'];

/**
 * A key id is only ever used as a lookup key into an in-memory key set, never as a path or a
 * query; still, anything outside this shape (path separators, quotes, spaces) is refused so
 * that no later change can turn it into an injection.
 */
const KID_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const ALLOWED_TYP = new Set(['jwt', 'at+jwt', 'application/jwt', 'application/at+jwt']);
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function refuse(reason: string): never {
  throw new CoreError('INVALID_TOKEN', reason);
}

/**
 * Check the shape of a compact JWS and screen its protected header. Throws
 * CoreError('INVALID_TOKEN') with a short reason. Does not verify anything cryptographically:
 * the caller uses `alg` only to pick a verifier from an explicit allow-list.
 */
export function inspectToken(token: string): TokenHeader {
  if (typeof token !== 'string' || token.length === 0) refuse('empty token');
  if (token.length > MAX_TOKEN_LENGTH) refuse('token too large');
  if (!COMPACT_JWS.test(token)) refuse('malformed token');

  const encodedHeader = token.slice(0, token.indexOf('.'));
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(encodedHeader, 'base64url').toString('utf8'));
  } catch {
    refuse('malformed token header');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) refuse('malformed token header');
  const h = header as Record<string, unknown>;

  for (const param of FORBIDDEN_HEADER_PARAMS) {
    if (Object.hasOwn(h, param)) refuse(`token header parameter "${param}" is not accepted`);
  }
  if (typeof h.alg !== 'string' || h.alg.length === 0) refuse('token header has no algorithm');
  if (h.kid !== undefined && (typeof h.kid !== 'string' || !KID_PATTERN.test(h.kid) || h.kid.includes('..'))) {
    refuse('invalid key id');
  }
  if (h.typ !== undefined && (typeof h.typ !== 'string' || !ALLOWED_TYP.has(h.typ.toLowerCase()))) {
    refuse('unexpected token type');
  }
  return { alg: h.alg, kid: h.kid as string | undefined, typ: h.typ as string | undefined };
}
