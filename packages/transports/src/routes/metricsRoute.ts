import { Hono, type Handler } from 'hono';
import type { Runtime } from '@ai-backend/core/internal';
import { bearerToken } from '../edge/requestFacts.js';

async function exposition(runtime: Runtime): Promise<Response> {
  if (!runtime.metrics) return new Response('metrics are disabled\n', { status: 404, headers: { 'content-type': 'text/plain' } });
  const { contentType, body } = await runtime.metrics.exposition();
  return new Response(body, { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' } });
}

/**
 * GET /metrics on the main listener: administrators only (a Bearer token of an administrator,
 * as for admin.* procedures). Metrics reveal traffic and provider use, never user ids.
 */
export function adminMetricsHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const token = bearerToken(c.req.raw);
    if (!token) return c.json({ error: 'authentication required' }, 401, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
    const auth = await runtime.authenticate(token);
    if (!auth.ok) return c.json({ error: 'invalid token' }, 401, { 'WWW-Authenticate': 'Bearer realm="metrics", error="invalid_token"' });
    if (!auth.identity.isAdmin) return c.json({ error: 'administrator access required' }, 403);
    return exposition(runtime);
  };
}

/** The app of the separate metrics listener (`metrics.port`, bound to `metrics.host`): no authentication. */
export function metricsListenerApp(getRuntime: () => Promise<Runtime>): Hono {
  const app = new Hono();
  app.get('/metrics', async () => exposition(await getRuntime()));
  app.notFound((c) => c.text('not found\n', 404));
  return app;
}
