import { Hono } from 'hono';
import { checkHealth, healthFor, type Runtime } from '@ai-backend/core/internal';

/** What the health routes use: the registered probes, and the token check that shows an administrator the details. */
export type HealthServices = Pick<Runtime, 'health' | 'authenticate'>;
import { bearerToken } from '../edge/requestFacts.js';

/**
 * GET /health: liveness (cheap, no dependency calls, always 200 while the process serves).
 * GET /health/ready: readiness, each dependency probed; 503 when one is down. The status is
 * public; each dependency's detail text only for an administrator's bearer token.
 */
export function healthRoutes(getServices: () => Promise<HealthServices>): Hono {
  const app = new Hono();
  app.get('/health', (c) => c.json({ status: 'ok', uptime: process.uptime(), timestamp: new Date().toISOString() }));
  app.get('/health/ready', async (c) => {
    const services = await getServices();
    const bearer = bearerToken(c.req.raw);
    const who = bearer ? await services.authenticate(bearer, { request: c.req.raw }) : undefined;
    const report = healthFor(await checkHealth(services), who?.ok === true && who.identity.isAdmin ? 'admin' : 'public');
    return c.json(report, report.status === 'ok' ? 200 : 503);
  });
  return app;
}
