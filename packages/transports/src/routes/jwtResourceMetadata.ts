import type { Handler } from 'hono';
import { mcpResourceUrl, publicBaseUrl, resourceMetadataUrl, type ResolvedConfig } from '@ai-backend/core/internal';

/**
 * RFC 9728 protected-resource metadata for a server that accepts JWTs but runs no OAuth
 * authorization server. Our 401 challenges always name this document, so it must exist; it
 * names `jwt.issuer` as the authorization server when that is a URL (tokens come from there),
 * and otherwise lists none: such clients are configured with a token out of band. Served at the
 * root and at the path-suffixed URL of /mcp (RFC 9728 §3.1, what the challenges name); any other
 * suffix is 404.
 */
export function jwtResourceMetadataHandler(config: ResolvedConfig): Handler {
  const issuer = config.jwt.issuer && /^https?:\/\//.test(config.jwt.issuer) ? [config.jwt.issuer] : [];
  return (c) => {
    const base = publicBaseUrl(c.req.url, c.req.raw.headers, config);
    if (c.req.path !== '/.well-known/oauth-protected-resource' && c.req.path !== new URL(resourceMetadataUrl(base)).pathname)
      return c.json({ error: 'not found' }, 404);
    return c.json(
      {
        resource: mcpResourceUrl(base),
        authorization_servers: issuer,
        bearer_methods_supported: ['header'],
        scopes_supported: config.mcp.auth.jwt.requiredScopes,
        resource_name: 'ai-backend MCP server',
      },
      200,
      { 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'public, max-age=300' },
    );
  };
}
