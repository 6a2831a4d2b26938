import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { fileURLToPath } from 'node:url';
import { ConfigError, createServer, loadConfig } from 'ai-backend';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const rpc = (method: string, params: unknown, headers: Record<string, string> = {}) =>
  new Request('http://127.0.0.1:8000/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });

describe('examples', () => {
  it('custom-router: the TypeScript config loads through the CLI loader and its namespace is served', async () => {
    const { input } = await loadConfig({ file: here('./custom-router/ai-backend.config.ts'), env: { JWT_SECRET: 'e'.repeat(32) } });
    const server = createServer(input);
    await server.ready();
    const ok = (await (await server.fetch(rpc('weather.forecast', { city: 'Oslo', days: 2 }))).json()) as any;
    expect(ok.result.days).toHaveLength(2);
    // `middleware` and `mergeRouters` from the published entry: the merged router serves both
    // halves, and the example's own middleware ran on the way.
    expect(ok.result.station).toBe('example-weather-station');
    const denied = (await (await server.fetch(rpc('weather.saveFavourite', { city: 'Oslo' }))).json()) as any;
    expect(denied.error.data.code).toBe('UNAUTHORIZED');
    await server.stop();
  });

  it('ConfigError from the published entry is what a bad config throws, with each problem and its path', () => {
    let thrown: unknown;
    try {
      createServer({ port: -1, storage: { type: 'memory' } });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).problems).toEqual([{ path: 'port', message: expect.stringMatching(/>=0/) }]);
  });

  it('basic: the config is valid', async () => {
    const { input } = await loadConfig({ file: here('./basic/ai-backend.config.mjs'), env: { JWT_SECRET: 'b'.repeat(32) } });
    const server = createServer({ ...input, storage: { type: 'memory' } });
    await server.ready();
    expect(server.config.serverWorkspaces.workspaces.docs?.readOnly).toBe(true);
    await server.stop();
  });

  it('redis-cluster: the config is valid and shares one Redis', async () => {
    const { input } = await loadConfig({ file: here('./redis-cluster/ai-backend.config.mjs'), env: { JWT_SECRET: 'r'.repeat(32) } });
    const server = createServer(input);
    expect(server.config.storage.type).toBe('redis');
    expect(server.config.mcp.sessionMode).toBe('stateless');
    await server.stop();
  });

  it('embedded-hono: the app mounts under a prefix of another Hono app', async () => {
    const backend = createServer({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } });
    await backend.ready();
    const app = new Hono();
    app.route('/api', backend.app);
    const res = await app.request('/api/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.echo', params: { message: 'mounted' } }),
    });
    expect(((await res.json()) as any).result).toEqual({ message: 'mounted' });
    expect((await app.request('/api/health')).status).toBe(200);
    const trpc = await app.request('/api/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'typed' } })));
    expect(((await trpc.json()) as any).result.data.json).toEqual({ message: 'typed' });
    await backend.stop();
  });
});
