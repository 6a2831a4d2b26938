import type { Handler } from 'hono';
import { mcpResourceUrl, resourceMetadataUrl } from './challenge.js';
import { OPEN_CORS } from './metadata.js';
import type { OAuthServices } from './oauthServices.js';

const PRM_ROOT = '/.well-known/oauth-protected-resource';

/**
 * GET /.well-known/oauth-protected-resource[/mcp] (RFC 9728). `resource` is exactly the URL
 * clients use for /mcp (§3.3: clients compare it with the URL they called), and this server
 * is its authorization server. Served at the root (MCP's fallback) and at the one path-suffixed
 * URL derived from /mcp (§3.1); any other suffix names a resource we do not have, so it is 404
 * rather than a document whose `resource` the client must then reject.
 */
export function protectedResourceHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
    if (c.req.path !== PRM_ROOT && c.req.path !== new URL(resourceMetadataUrl(base)).pathname) return c.json({ error: 'not found' }, 404);
    return c.json(
      {
        resource: mcpResourceUrl(base),
        authorization_servers: [base],
        // MCP: refresh tokens are not a resource requirement, so offline_access is never listed here.
        scopes_supported: s.settings.scopesSupported.filter((x) => x !== 'offline_access'),
        bearer_methods_supported: ['header'],
        resource_name: 'ai-backend MCP server',
      },
      200,
      { ...OPEN_CORS, 'Cache-Control': 'public, max-age=300' },
    );
  };
}
