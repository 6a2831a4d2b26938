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
  'ai', '@ai-sdk/', '@openrouter/', 'undici', 'ioredis', 'pg', 'better-sqlite3', 'jose', '@modelcontextprotocol/sdk', 'prom-client',
  '@opentelemetry/api', 'micromatch', 'ipaddr.js', 'mime-types', 'cosmiconfig', 'jiti', 'jsonc-parser', 'dotenv', 'node:zlib', 'node:dns', 'node:child_process',
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
import { createServer } from 'ai-backend';
const server = createServer({ port: 0, storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } }, monitoring: { logging: { level: 'silent' } } });
const { url } = await server.start();
const health = await fetch(url + '/health');
await server.stop();
console.log(JSON.stringify({ health: health.status }));
`;
  const out = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, '--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 60_000 });
  expect(out.status, out.stderr).toBe(0);
  expect(JSON.parse(out.stdout.trim().split('\n').at(-1)!).health).toBe(200);
  const resolved = new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean));
  expect(resolved.has('zod'), 'the hook records bare specifiers').toBe(true);
  const loaded = [...resolved].filter((s) => LAZY.some((l) => (l.endsWith('/') ? s.startsWith(l) : s === l || s.startsWith(l + '/'))));
  expect(loaded).toEqual([]);
});
