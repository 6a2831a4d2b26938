import { Hono } from 'hono';
import {
  CORE_ERROR_TABLE,
  GATEWAY_OAUTH_CALLBACK_PATH,
  GATEWAY_OAUTH_CLIENT_METADATA_PATH,
  gatewayClientMetadata,
  isCoreError,
  publicBaseUrl,
  type Runtime,
} from '@ai-backend/core/internal';

/** What the gateway's OAuth client routes use: the credential exchange, the config (public URL) and a log. */
export type GatewayOAuthServices = Pick<Runtime, 'upstreamCredentials' | 'config' | 'logger'>;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** The page the user's browser lands on: no script, not framed, not cached, no Referer (the URL carried a code). */
function page(title: string, text: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`;
}
const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
};

/**
 * The two routes of the gateway's OAuth client (docs/mcp-gateway.md "Per-user credentials and
 * OAuth"): the redirect URI an upstream's authorization server sends the user back to, and our
 * client ID metadata document. The exchange itself is core's (UpstreamCredentials).
 */
export function gatewayOAuthRoutes(getServices: () => Promise<GatewayOAuthServices>): Hono {
  const app = new Hono();
  app.get(GATEWAY_OAUTH_CALLBACK_PATH, async (c) => {
    const services = await getServices();
    const q = (name: string) => c.req.query(name);
    const params = { state: q('state'), code: q('code'), error: q('error'), iss: q('iss') };
    try {
      const { server } = await services.upstreamCredentials.completeAuthorization(
        Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)),
      );
      return c.html(
        page(
          `Connected to ${server}`,
          `Your account at ${server} is connected. You can close this window; its tools now work with your own authorization.`,
        ),
        200,
        PAGE_HEADERS,
      );
    } catch (err) {
      if (!isCoreError(err)) throw err;
      services.logger.warn('gateway: upstream authorization not completed', { code: err.appCode, reason: err.message });
      const status = CORE_ERROR_TABLE[err.appCode].http as 400;
      return c.html(page('Not connected', err.message), status, PAGE_HEADERS);
    }
  });
  app.get(GATEWAY_OAUTH_CLIENT_METADATA_PATH, async (c) => {
    const services = await getServices();
    return c.json(gatewayClientMetadata(publicBaseUrl(c.req.url, c.req.raw.headers, services.config)), 200, {
      'cache-control': 'public, max-age=3600',
    });
  });
  return app;
}
