// JWT: bearer-token verification and the runtime's authenticator.
export {
  createAuthenticator,
  DEFAULT_OAUTH_ALGORITHMS,
  type CreateAuthenticatorOptions,
  type OAuthTokenVerifier,
} from './jwt/createAuthenticator.js';
export {
  createJwtVerifier,
  JWT_ALGORITHMS,
  MIN_SECRET_BYTES,
  type JwtVerifier,
  type JwtVerifierOptions,
} from './jwt/createJwtVerifier.js';
export { mintDevToken, type MintDevTokenOptions } from './jwt/mintDevToken.js';
export { inspectToken, MAX_TOKEN_LENGTH, type TokenHeader } from './jwt/inspectToken.js';
export { mapJoseError } from './jwt/mapJoseError.js';
export { identityFromClaims, isAdminIdentity, readScopes, type AdminRule } from './jwt/identityFromClaims.js';
// The OAuth 2.1 authorization server is on the `@ai-backend/auth/oauth` entry (loaded only when
// configured); its config check is here so callers can decide without loading it.
export { checkOAuthConfig } from './oauth/oauthSettings.js';
