import { Hono } from 'hono';
import { checkHealth, type Runtime } from '@ai-backend/core';

/**
 * GET /health: liveness (cheap, no dependency calls, always 200 while the process serves).
 * GET /health/ready: readiness, each dependency probed; 503 when one is down.
 */
export function healthRoutes(getRuntime: () => Promise<Runtime>): Hono {
  const app = new Hono();
  app.get('/health', (c) => c.json({ status: 'ok', uptime: process.uptime(), timestamp: new Date().toISOString() }));
  app.get('/health/ready', async (c) => {
    const report = await checkHealth(await getRuntime());
    return c.json(report, report.status === 'ok' ? 200 : 503);
  });
  return app;
}
