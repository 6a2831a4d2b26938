/**
 * What a default server loads before it answers: the dependencies docs/architecture.md lists as
 * loaded on first use must not come back as static imports. A child process imports the built
 * `ai-backend` behind a module-resolution hook that records every ES module specifier it
 * resolves (node: builtins included), starts a default server (memory storage, no auth) and
 * answers /health. CommonJS loaded with require() on first use (prom-client, micromatch) does not
 * pass the hook; what this guards is an `import` reappearing at the top of a module.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'ai-backend-startup-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LAZY = [
  'ai',
  '@ai-sdk/',
  '@openrouter/',
  'ioredis',
  'pg',
  'better-sqlite3',
  'jose',
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/client',
  'prom-client',
  '@opentelemetry/api',
  'micromatch',
  'ipaddr.js',
  'mime-types',
  'cosmiconfig',
  'jiti',
  'jsonc-parser',
  'dotenv',
  'node:zlib',
  'node:dns',
  'node:https',
  'node:child_process',
];

it('a default server answers /health without loading the dependencies it loads on first use', () => {
  const log = join(dir, 'resolved.txt');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  appendFileSync(${JSON.stringify(log)}, specifier + '\\n');
  return next(specifier, context);
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const script = `
import { appendFileSync } from 'node:fs';
import { createServer } from 'ai-backend';
const server = createServer({ port: 0, storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } }, monitoring: { logging: { level: 'silent' } } });
const { url } = await server.start();
const health = await fetch(url + '/health');
const lazyAtHealth = Object.keys(server.router._def.lazy).sort();
appendFileSync(${JSON.stringify(log)}, '--first-call--\\n');
const rpc = await fetch(url + '/rpc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ai.listProviders' }) }).then((r) => r.json());
const lazyAfterCall = Object.keys(server.router._def.lazy);
appendFileSync(${JSON.stringify(log)}, '--first-ai-call--\\n');
// No provider key is configured: the call fails, after the engine that runs it has loaded.
const generate = await fetch(url + '/rpc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ai.generateText', params: { content: 'hi', systemPrompt: 'Answer briefly.' } }) }).then((r) => r.json());
await server.stop();
console.log(JSON.stringify({ health: health.status, lazyAtHealth, lazyAfterCall, providers: Array.isArray(rpc.result?.providers), generateFailed: generate.error !== undefined }));
`;
  const out = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, '--input-type=module', '-e', script], {
    cwd: process.cwd(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(out.status, out.stderr).toBe(0);
  const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
  expect(result.health).toBe(200);
  const [beforeCall, rest] = readFileSync(log, 'utf8').split('--first-call--\n');
  const [afterCall, afterAiCall] = rest!.split('--first-ai-call--\n');
  const resolved = new Set(beforeCall!.split('\n').filter(Boolean));
  expect(resolved.has('zod'), 'the hook records bare specifiers').toBe(true);
  const loaded = [...resolved].filter((s) => LAZY.some((l) => (l.endsWith('/') ? s.startsWith(l) : s === l || s.startsWith(l + '/'))));
  expect(loaded).toEqual([]);
  // The lazy built-in namespaces (docs/architecture.md#lazy-namespaces): neither their chunk nor
  // their procedures before the first API call; all of them after it, which the call itself used.
  // Nor the /v1 wire formats' handlers, which load on the first /v1 request.
  expect(result.lazyAtHealth).toEqual(['admin', 'ai', 'auth', 'billing', 'gateway', 'keys', 'system', 'user']);
  expect([...resolved].filter((s) => s.includes('lazyNamespaces') || s.includes('v1Handlers'))).toEqual([]);
  expect(afterCall!.split('\n').some((s) => s.includes('lazyNamespaces'))).toBe(true);
  expect(result.lazyAfterCall).toEqual([]);
  expect(result.providers).toBe(true);
  // The AI call engine (prepareCall, the attempt loop, streaming, embeddings) loads on the first
  // generate, stream or embed call: not at start, not with the namespaces.
  const engine = (lines: string) => lines.split('\n').some((s) => s.includes('callEngine'));
  expect(engine(beforeCall!) || engine(afterCall!)).toBe(false);
  expect(result.generateFailed).toBe(true);
  expect(engine(afterAiCall!)).toBe(true);
  // The API documents' builders load on the first request for a document, which nothing here made.
  expect(
    readFileSync(log, 'utf8')
      .split('\n')
      .filter((s) => /openRpcDocument|openApiDocument/.test(s)),
  ).toEqual([]);
});

it('health checks alone do not load prom-client; the first other request does, and every request before it is counted', () => {
  const script = `
import { createRequire } from 'node:module';
import { createServer } from 'ai-backend';
const cache = createRequire(import.meta.url).cache;
const promLoaded = () => Object.keys(cache).some((k) => k.includes('/prom-client/'));
const server = createServer({ port: 0, storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } }, monitoring: { logging: { level: 'silent' } }, metrics: { port: 0 } });
const { url } = await server.start();
for (let i = 0; i < 3; i++) await fetch(url + '/health').then((r) => r.text());
// A deliberate pause: time for a load the health checks would have caused (asserting none does).
await new Promise((r) => setTimeout(r, 50));
const afterHealth = promLoaded();
await fetch(url + '/rpc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.ping' }) }).then((r) => r.text());
// prom-client loads right after the request (setImmediate): polled for, up to 10 s, not slept for.
for (let i = 0; i < 500 && !promLoaded(); i++) await new Promise((r) => setTimeout(r, 20));
const afterCall = promLoaded();
const body = await fetch(server.metricsAddress().url + '/metrics').then((r) => r.text());
const line = (entry) => body.split('\\n').find((l) => l.startsWith('ai_backend_http_requests_total{') && l.includes('entry="' + entry + '"'));
console.log(JSON.stringify({ afterHealth, afterCall, health: line('health'), rpc: line('rpc') }));
await server.stop();
`;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 60_000 });
  expect(out.status, out.stderr).toBe(0);
  const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
  expect(result.afterHealth).toBe(false);
  expect(result.afterCall).toBe(true);
  expect(result.health).toMatch(/ 3$/);
  expect(result.rpc).toMatch(/ 1$/);
});
