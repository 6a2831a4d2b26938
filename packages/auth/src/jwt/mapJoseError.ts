import { CoreError } from '@ai-backend/core';
import type { errors } from 'jose';

const CLAIM_CHECK_FAILED: Record<string, string> = {
  iss: 'issuer mismatch',
  aud: 'audience mismatch',
  nbf: 'token not yet valid',
  iat: 'token issued in the future',
  typ: 'unexpected token type',
};

/**
 * Turn a jose verification error into CoreError('INVALID_TOKEN') with a short, client-safe
 * reason. Classified by jose's error `code` and the failing claim, never by message text.
 * CoreErrors pass through unchanged. Exported so the OAuth access-token verifier reports the
 * same reasons.
 */
export function mapJoseError(err: unknown): CoreError {
  if (err instanceof CoreError) return err;
  if (!isJoseError(err)) return new CoreError('INVALID_TOKEN', 'invalid token', { cause: err });
  const reason = joseReason(err);
  return new CoreError('INVALID_TOKEN', reason, { cause: err });
}

/**
 * jose errors carry a closed set of `ERR_J…` codes (JOSEErrorCode); checking the code instead of
 * `instanceof` lets this module run without loading jose.
 */
function isJoseError(err: unknown): err is errors.JOSEError {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'string' && /^ERR_J(OSE|WS|WT|WE|WK|WKS)_/.test(code);
}

function joseReason(err: errors.JOSEError): string {
  switch (err.code) {
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'invalid signature';
    case 'ERR_JWT_EXPIRED':
      return 'token expired';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'algorithm not allowed';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = err as errors.JWTClaimValidationFailed;
      if (reason === 'missing') return claim === 'exp' ? 'token has no expiry' : `missing ${claim} claim`;
      if (reason === 'invalid') return `invalid ${claim} claim`;
      return CLAIM_CHECK_FAILED[claim] ?? `${claim} claim check failed`;
    }
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return 'malformed token';
    default:
      return 'invalid token';
  }
}
