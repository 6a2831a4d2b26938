/**
 * server.fetch serves requests without the Node HTTP adapter: a child process whose module
 * resolution refuses `@hono/node-server` (as in a fetch runtime that lacks it) and the
 * better-sqlite3 native addon (only the default SQLite store may load it) imports the built
 * `ai-backend`, answers /health and a JSON-RPC call through server.fetch, and only start() fails.
 * Behind another runtime the Host is a public name: it must be in `mcp.allowedHosts` (README).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createServer } from 'ai-backend';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'ai-backend-fetch-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('createServer().fetch answers with @hono/node-server and better-sqlite3 unresolvable; start() is what needs the adapter', () => {
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `export async function resolve(specifier, context, next) {
  if (specifier === '@hono/node-server' || specifier.startsWith('@hono/node-server/') || specifier === 'better-sqlite3') throw new Error('blocked ' + specifier);
  return next(specifier, context);
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const script = `
import { createServer } from 'ai-backend';
const server = createServer({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } }, monitoring: { logging: { level: 'silent' } } });
const health = await server.fetch(new Request('http://localhost/health'));
const rpc = await server.fetch(new Request('http://localhost/rpc', { method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.greeting', params: { name: 'Ada' } }) }));
let start = 'started';
try { await server.start(); } catch (err) { start = String(err.message); }
await server.stop();
console.log(JSON.stringify({ health: health.status, rpc: await rpc.json(), start }));
`;
  const out = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, '--input-type=module', '-e', script], {
    cwd: process.cwd(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(out.status, out.stderr).toBe(0);
  const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
  expect(result.health).toBe(200);
  expect(result.rpc.result, JSON.stringify(result.rpc)).toMatchObject({ greeting: expect.stringContaining('Ada') });
  expect(result.start).toContain('blocked @hono/node-server');
});

it('through server.fetch a public Host is refused (403) unless it is in mcp.allowedHosts, as the README says', async () => {
  const call = async (config: Parameters<typeof createServer>[0]) => {
    const server = createServer({
      storage: { type: 'memory' },
      mcp: { auth: { authType: 'none' }, ...config?.mcp },
      monitoring: { logging: { level: 'silent' } },
    });
    try {
      const res = await server.fetch(
        new Request('https://api.example.com/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.greeting', params: { name: 'Ada' } }),
        }),
      );
      return { status: res.status, body: await res.text() };
    } finally {
      await server.stop();
    }
  };
  const refused = await call({});
  expect(refused.status).toBe(403);
  expect(refused.body).toContain('host not allowed');
  const allowed = await call({ mcp: { allowedHosts: ['api.example.com'] } });
  expect(allowed.status, allowed.body).toBe(200);
  expect(allowed.body).toContain('Ada');
});
