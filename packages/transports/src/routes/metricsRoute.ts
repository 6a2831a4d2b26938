import { Hono, type Handler } from 'hono';
import { keyAllowsProcedure, toWireError, type RequestAuthenticator, type Runtime } from '@ai-backend/core/internal';

/**
 * What the metrics routes use: the instance's metrics, and the token check of the admin route
 * (authenticateRequest: an API key's request counts against its requests per minute).
 */
export type MetricsServices = Pick<Runtime, 'metrics'> & { authenticate: RequestAuthenticator };
import { bearerToken, clientIp } from '../edge/requestFacts.js';

/** The name an API key's `tools` rule admits the admin metrics route by. */
const METRICS = 'metrics';

async function exposition({ metrics }: Pick<MetricsServices, 'metrics'>): Promise<Response> {
  if (!metrics) return new Response('metrics are disabled\n', { status: 404, headers: { 'content-type': 'text/plain' } });
  const { contentType, body } = await metrics.exposition();
  return new Response(body, { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' } });
}

/**
 * GET /metrics on the main listener: administrators only (a Bearer token of an administrator,
 * as for admin.* procedures). Metrics reveal traffic and provider use, never user ids. An
 * administrator API key with a `tools` rule reads them only when the rule admits `metrics`: the
 * rule narrows everything the key reaches, not only procedures (docs/api-keys.md). The client
 * address goes with the token, as on every entry point: a key's `allowedIps` is checked against
 * it (without it, a key limited to addresses was refused from every one of them).
 */
export function adminMetricsHandler(getServices: () => Promise<MetricsServices>, trustProxy: boolean): Handler {
  return async (c) => {
    const services = await getServices();
    const token = bearerToken(c.req.raw);
    if (!token) return c.json({ error: 'authentication required' }, 401, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
    const auth = await services.authenticate(token, { ip: clientIp(c, trustProxy), request: c.req.raw });
    if (!auth.ok) return c.json({ error: 'invalid token' }, 401, { 'WWW-Authenticate': 'Bearer realm="metrics", error="invalid_token"' });
    if (auth.refused) return c.json({ error: auth.refused.message }, toWireError(auth.refused).httpStatus as 429, auth.refused.headers);
    if (!auth.identity.isAdmin) return c.json({ error: 'administrator access required' }, 403);
    if (!keyAllowsProcedure(auth.identity.apiKey, METRICS, METRICS)) {
      return c.json({ error: "this API key may not read metrics: its tools rule does not admit 'metrics'" }, 403);
    }
    return exposition(services);
  };
}

/** The app of the separate metrics listener (`metrics.port`, bound to `metrics.host`): no authentication. */
export function metricsListenerApp(getServices: () => Promise<Pick<MetricsServices, 'metrics'>>): Hono {
  const app = new Hono();
  app.get('/metrics', async () => exposition(await getServices()));
  app.notFound((c) => c.text('not found\n', 404));
  return app;
}
