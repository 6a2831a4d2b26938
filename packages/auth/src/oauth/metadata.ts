import type { Handler } from 'hono';
import type { OAuthServices } from './oauthServices.js';
import type { OAuthSettings } from './oauthSettings.js';

/** The discovery documents may be read from any origin (spec: fixed CORS answer). */
export const OPEN_CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Content-Type, Authorization, mcp-protocol-version',
  'Access-Control-Max-Age': '86400',
} as const;

/** Scopes a client may ask for: the configured ones plus the admin scope (granted only to admin.users). */
export function allScopes(settings: OAuthSettings): string[] {
  return [...new Set([...settings.scopesSupported, settings.admin.scope])];
}

/** RFC 8414 authorization server metadata for a public base URL. */
export function authorizationServerMetadata(base: string, settings: OAuthSettings): Record<string, unknown> {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    registration_endpoint: `${base}/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    scopes_supported: allScopes(settings),
    // RFC 9207: our redirects carry `iss`, so clients can detect mix-up attacks.
    authorization_response_iss_parameter_supported: true,
    // MCP 2026-07-28: clients may use the https URL of their metadata document as client_id.
    client_id_metadata_document_supported: settings.clientIdMetadataDocuments.enabled,
  };
}

const AS_ROOT = '/.well-known/oauth-authorization-server';

/**
 * GET /.well-known/oauth-authorization-server[/<issuer path>]. RFC 8414 §3.3: the issuer must be
 * the one the well-known URL was derived from, so a suffix other than our issuer's path is 404
 * (a client then tries its next candidate) rather than a document it must discard. The root
 * stays served when the issuer has a path: clients of MCP 2025-03-26 look there.
 */
export function metadataHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
    if (c.req.path !== AS_ROOT && c.req.path !== `${AS_ROOT}${new URL(base).pathname.replace(/\/+$/, '')}`)
      return c.json({ error: 'not found' }, 404);
    return c.json(authorizationServerMetadata(base, s.settings), 200, { ...OPEN_CORS, 'Cache-Control': 'public, max-age=300' });
  };
}

/** OPTIONS on the discovery and client-facing endpoints: 200 with the fixed CORS answer, whatever `cors` says. */
export const preflightHandler: Handler = (c) => c.body(null, 200, OPEN_CORS);
