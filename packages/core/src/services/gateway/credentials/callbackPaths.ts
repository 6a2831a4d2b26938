/** Where the upstream's authorization server sends the user back (transports serve it, http/gatewayOAuthRoutes.ts). */
export const GATEWAY_OAUTH_CALLBACK_PATH = '/gateway/oauth/callback';
/** Our client ID metadata document, for authorization servers that take a URL as client_id. */
export const GATEWAY_OAUTH_CLIENT_METADATA_PATH = '/gateway/oauth/client-metadata.json';

/** The document at GATEWAY_OAUTH_CLIENT_METADATA_PATH for a server reached at `base`. */
export function gatewayClientMetadata(base: string) {
  return {
    client_id: `${base}${GATEWAY_OAUTH_CLIENT_METADATA_PATH}`,
    client_name: 'ai-backend MCP gateway',
    redirect_uris: [`${base}${GATEWAY_OAUTH_CALLBACK_PATH}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}
