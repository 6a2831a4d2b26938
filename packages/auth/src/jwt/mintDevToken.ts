import { loadJose } from './loadJose.js';
import { MIN_SECRET_BYTES } from './createJwtVerifier.js';

export interface MintDevTokenOptions {
  /** The configured `jwt.secret` (at least 32 bytes). */
  secret: string;
  /** Subject (`sub`). */
  sub: string;
  email?: string;
  /** Written as the spec's `scopes` array claim. Default none. */
  scopes?: readonly string[];
  /** Lifetime: seconds, or a jose time span such as '1h', '30m', '7d'. Default '1h'. */
  expiresIn?: number | string;
  /** `iss`; pass the configured `jwt.issuer` so the server accepts the token. */
  issuer?: string;
  /** `aud`; pass the configured `jwt.audience` so the server accepts the token. */
  audience?: string;
}

/**
 * Sign an HS256 development token with the shared secret (the `ai-backend token` command).
 * Always carries `exp` and `iat`: the server refuses tokens without expiry by default.
 */
export async function mintDevToken(opts: MintDevTokenOptions): Promise<string> {
  const secret = new TextEncoder().encode(opts.secret);
  if (secret.byteLength < MIN_SECRET_BYTES) throw new TypeError(`jwt.secret must be at least ${MIN_SECRET_BYTES} bytes`);
  if (!opts.sub) throw new TypeError('sub is required');
  const claims: Record<string, unknown> = { scopes: [...(opts.scopes ?? [])] };
  if (opts.email !== undefined) {
    // The operator holding the secret vouches for the address it puts in a dev token.
    claims.email = opts.email;
    claims.email_verified = true;
  }
  const expiresIn = opts.expiresIn ?? '1h';
  const { SignJWT } = await loadJose();
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(opts.sub)
    .setIssuedAt()
    .setExpirationTime(typeof expiresIn === 'number' ? Math.floor(Date.now() / 1000) + expiresIn : expiresIn);
  if (opts.issuer !== undefined) jwt.setIssuer(opts.issuer);
  if (opts.audience !== undefined) jwt.setAudience(opts.audience);
  return jwt.sign(secret);
}
