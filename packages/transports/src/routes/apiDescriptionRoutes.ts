import { Hono } from 'hono';
import { apiDocument, publicBaseUrl, type EntryGateway } from '@ai-backend/core/internal';

/**
 * GET /openrpc.json (the /rpc methods) and GET /openapi.json (the /trpc GET/POST forms). Public:
 * they describe procedures and who may call them, never data. `apiDescription.enabled: false`
 * removes them (and rpc.discover).
 */
export function apiDescriptionRoutes(
  getGateway: () => Promise<Pick<EntryGateway, 'router' | 'config'>>,
  opts: { openrpc: boolean; openapi: boolean },
): Hono {
  const app = new Hono();
  if (opts.openrpc) {
    app.get('/openrpc.json', async (c) => {
      const { router, config } = await getGateway();
      return c.json(await apiDocument('openrpc', router, config, publicBaseUrl(c.req.url, c.req.raw.headers, config)));
    });
  }
  if (opts.openapi) {
    app.get('/openapi.json', async (c) => {
      const { router, config } = await getGateway();
      return c.json(await apiDocument('openapi', router, config, publicBaseUrl(c.req.url, c.req.raw.headers, config)));
    });
  }
  return app;
}
