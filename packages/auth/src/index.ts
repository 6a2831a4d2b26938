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
// OAuth 2.1 authorization server delegating sign-in to an external identity provider.
export { createOAuthRoutes, type CreateOAuthRoutesOptions, type OAuthRoutes } from './oauth/createOAuthRoutes.js';
export { bearerChallenge, resourceMetadataUrl, mcpResourceUrl, type BearerChallenge } from './oauth/challenge.js';
export { checkOAuthConfig } from './oauth/oauthSettings.js';
export { ACCESS_TOKEN_ALGORITHMS, type VerifyAccessTokenOptions } from './oauth/accessTokens.js';
