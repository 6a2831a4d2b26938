import type { Handler } from 'hono';
import { mcpResourceUrl } from './challenge.js';
import { OPEN_CORS } from './metadata.js';
import type { OAuthServices } from './oauthServices.js';

/**
 * GET /.well-known/oauth-protected-resource[/mcp] (RFC 9728). `resource` is exactly the URL
 * clients use for /mcp (§3.3: clients compare it with the URL they called), and this server
 * is its authorization server.
 */
export function protectedResourceHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
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
