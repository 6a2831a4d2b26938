import { Hono } from 'hono';
import { apiDocument, publicBaseUrl, type Runtime } from '@ai-backend/core/internal';

/**
 * GET /openrpc.json (the /rpc methods) and GET /openapi.json (the /trpc GET/POST forms). Public:
 * they describe procedures and who may call them, never data. `apiDescription.enabled: false`
 * removes them (and rpc.discover).
 */
export function apiDescriptionRoutes(getRuntime: () => Promise<Runtime>, opts: { openrpc: boolean; openapi: boolean }): Hono {
  const app = new Hono();
  if (opts.openrpc) {
    app.get('/openrpc.json', async (c) => {
      const runtime = await getRuntime();
      return c.json(
        await apiDocument('openrpc', runtime.router, runtime.config, publicBaseUrl(c.req.url, c.req.raw.headers, runtime.config)),
      );
    });
  }
  if (opts.openapi) {
    app.get('/openapi.json', async (c) => {
      const runtime = await getRuntime();
      return c.json(
        await apiDocument('openapi', runtime.router, runtime.config, publicBaseUrl(c.req.url, c.req.raw.headers, runtime.config)),
      );
    });
  }
  return app;
}
