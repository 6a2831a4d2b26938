/**
 * `@ai-backend/auth/oauth`: the OAuth 2.1 authorization server, delegating sign-in to an
 * external identity provider. Its own entry so that servers without OAuth never load it.
 */
export { createOAuthRoutes, type CreateOAuthRoutesOptions, type OAuthRoutes } from './createOAuthRoutes.js';
export type { OAuthServerDeps } from './oauthServices.js';
export { bearerChallenge, resourceMetadataUrl, mcpResourceUrl, type BearerChallenge } from './challenge.js';
export { checkOAuthConfig } from './oauthSettings.js';
export { ACCESS_TOKEN_ALGORITHMS, type VerifyAccessTokenOptions } from './accessTokens.js';
