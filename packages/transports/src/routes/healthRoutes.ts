import { Hono } from 'hono';
import {
  checkHealth,
  healthFor,
  keyAllowsProcedure,
  toWireError,
  type Identity,
  type RequestAuthenticator,
  type Runtime,
} from '@ai-backend/core/internal';

/**
 * What the health routes use: the registered probes, and the token check that shows an
 * administrator the details (authenticateRequest: an API key's request counts against its
 * requests per minute).
 */
export type HealthServices = Pick<Runtime, 'health'> & { authenticate: RequestAuthenticator };
import { bearerToken, clientIp } from '../edge/requestFacts.js';

/**
 * GET /health: liveness (cheap, no dependency calls, always 200 while the process serves).
 * GET /health/ready: readiness, each dependency probed; 503 when one is down. The status is
 * public; each dependency's detail text only for an administrator's bearer token (checked with the
 * client address, as on every entry point, so an administrator key's `allowedIps` holds here too).
 * The details are `system.health`'s (the MCP tool `health`): an administrator API key whose `tools`
 * rule does not admit that procedure gets the public report, as a key narrowed away from /metrics
 * does not read it (a rule narrows everything the key reaches, docs/api-keys.md).
 */
export function healthRoutes(getServices: () => Promise<HealthServices>, trustProxy: boolean): Hono {
  const app = new Hono();
  app.get('/health', (c) => c.json({ status: 'ok', uptime: process.uptime(), timestamp: new Date().toISOString() }));
  app.get('/health/ready', async (c) => {
    const services = await getServices();
    const bearer = bearerToken(c.req.raw);
    const who = bearer ? await services.authenticate(bearer, { ip: clientIp(c, trustProxy), request: c.req.raw }) : undefined;
    // An API key over its requests per minute is refused here too, before any probe runs.
    if (who?.ok && who.refused)
      return c.json({ error: who.refused.message }, toWireError(who.refused).httpStatus as 429, who.refused.headers);
    const report = healthFor(await checkHealth(services), who?.ok === true && seesDetails(who.identity) ? 'admin' : 'public');
    return c.json(report, report.status === 'ok' ? 200 : 503);
  });
  return app;
}

/** An administrator, through a sign-in or an administrator key whose rules admit `system.health`. */
function seesDetails(identity: Identity): boolean {
  return identity.isAdmin && keyAllowsProcedure(identity.apiKey, 'system.health', 'health');
}
