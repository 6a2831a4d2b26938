import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { mintDevToken } from '@ai-backend/auth';
import { accessDecisionsMade, entryGateway, invoke, type Runtime, runtimeOfServices } from '@ai-backend/core/internal';
import { createServer } from '../createServer.js';
import { serveEntry, type EntryStep } from './serveEntry.js';

const SECRET = 'serve-entry-test-secret-0123456789abcdef01';
let server: ReturnType<typeof createServer>;
let runtime: Runtime;
let user: string;

beforeAll(async () => {
  server = createServer({
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'error' } },
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, maxToolCalls: 2 } },
    jwt: { secret: SECRET },
  });
  runtime = runtimeOfServices(await server.ready());
  user = await mintDevToken({ secret: SECRET, sub: 'serve-entry-user', expiresIn: '1h' });
});
afterAll(() => server.stop());

/** An entry point whose body names one procedure; every step it reaches is recorded in order. */
function entry(steps: string[]) {
  const app = new Hono();
  app.post('/x', (c) =>
    serveEntry<{ path: string }>(
      c,
      entryGateway(runtime),
      {
        transport: 'rpc',
        refusals: 'http',
        toolCalls: 'before-dispatch',
        async readCalls(c) {
          const { path } = (await c.req.json()) as { path: string };
          return { calls: [{ kind: 'procedure', path }], parsed: { path } };
        },
        refuse: (c, _scope, error, status) => {
          steps.push(`refused ${status} ${error.appCode}`);
          return c.json({ refused: error.appCode }, status as 401);
        },
        async run(c, scope, { path }) {
          const r = await invoke(runtime.router, path, { message: 'x' }, scope.context());
          steps.push(r.ok ? 'answered' : `failed ${r.error.code}`);
          return c.json({ ok: r.ok });
        },
      },
      (step: EntryStep) => steps.push(step),
    ),
  );
  return (token: string | null, path: string) =>
    app.request('/x', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ path }),
    });
}

describe('serveEntry: one order for every entry point', () => {
  it('scope → credential → read calls → access decision → limits → invoke, one decision per call', async () => {
    const steps: string[] = [];
    const before = accessDecisionsMade();
    expect((await entry(steps)(user, 'mcp.echo')).status).toBe(200);
    expect(steps).toEqual(['scope', 'credential', 'read calls', 'access decision', 'limits', 'invoke', 'answered']);
    expect(accessDecisionsMade() - before).toBe(1);
  });

  it('a refused credential ends the request before its body is read', async () => {
    const steps: string[] = [];
    expect((await entry(steps)('not-a-token', 'mcp.echo')).status).toBe(401);
    expect(steps).toEqual(['scope', 'credential', 'refused 401 INVALID_TOKEN']);
  });

  it('an anonymous call to an administrator procedure is refused at the access decision, decided once', async () => {
    const steps: string[] = [];
    const before = accessDecisionsMade();
    expect((await entry(steps)(null, 'admin.status')).status).toBe(401);
    expect(steps).toEqual(['scope', 'credential', 'read calls', 'access decision', 'refused 401 UNAUTHORIZED']);
    expect(accessDecisionsMade() - before).toBe(1);
  });

  it('tool calls over the limit are refused in the limits step, before anything is invoked', async () => {
    const steps: string[] = [];
    const call = entry(steps);
    const other = await mintDevToken({ secret: SECRET, sub: 'serve-entry-limited', expiresIn: '1h' });
    for (let i = 0; i < 2; i++) expect((await call(other, 'mcp.echo')).status).toBe(200);
    steps.length = 0;
    expect((await call(other, 'mcp.echo')).status).toBe(429);
    expect(steps).toEqual(['scope', 'credential', 'read calls', 'access decision', 'limits', 'refused 429 RATE_LIMITED']);
  });
});
