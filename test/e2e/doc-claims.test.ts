/**
 * Claims the docs make about what a client sees, checked against a real server (each was once
 * false): docs/workspaces.md (unknown workspaceId), docs/ai.md (base URLs in admin.getConfig),
 * docs/auth-jwt.md (a token in the query string on each entry point) and the start-up warning
 * for an auth mode nobody can use (docs/getting-started.md, README), the rate-limiting default
 * (docs/configuration.md, docs/security.md, README) and the README's storage list. Config-file checks are in
 * getting-started.test.ts and config-parity.test.ts.
 */
import { mintDevToken } from '@ai-backend/auth';
import { createLogger, resolveConfig, STORAGE_BACKENDS } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'doc-claims-secret-0123456789abcdefghijkl';
let s: TestServer;
let dir: string;
let admin: string;
let user: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-doc-claims-'));
  s = await startTestServer({
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'jwt' } },
    serverWorkspaces: { docs: { path: dir } },
    ai: { providers: { openai: { baseUrl: 'http://user:pass@127.0.0.1:9/v1?key=sk-in-query' } } },
  });
  admin = await mintDevToken({ secret: SECRET, sub: 'doc-admin', scopes: ['mcp', 'mcp:admin'] });
  user = await mintDevToken({ secret: SECRET, sub: 'doc-user', scopes: ['mcp'] });
});
afterAll(async () => {
  await s?.stop();
  await rm(dir, { recursive: true, force: true });
});

const rpc = async (method: string, params: unknown, token?: string, query = '') => {
  const res = await s.fetch(`/rpc${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: res.status, body: (await res.json()) as { result?: any; error?: { code: number; message: string; data?: any } } };
};

describe('docs/workspaces.md: errors', () => {
  it('an unknown workspaceId is NOT_FOUND: -32004 on /rpc, 404 on /trpc, "workspace not found"', async () => {
    const r = await rpc('system.listFiles', { workspaceId: 'no-such-workspace', path: '' }, user);
    expect(r.body.error).toMatchObject({ code: -32004, message: 'workspace not found', data: { code: 'NOT_FOUND' } });
    const t = await s.fetch(
      '/trpc/system.listFiles?input=' + encodeURIComponent(JSON.stringify({ json: { workspaceId: 'no-such-workspace', path: '' } })),
      { headers: { authorization: `Bearer ${user}` } },
    );
    expect(t.status).toBe(404);
  });
});

describe('docs/ai.md: base URLs', () => {
  it('administrators see ai.providers.<id>.baseUrl in admin.getConfig, userinfo and query values redacted', async () => {
    const r = await rpc('admin.getConfig', { section: 'all' }, admin);
    // getConfig groups the config by section: the `ai` section holds the `ai` key.
    const baseUrl: string = r.body.result.ai.ai.providers.openai.baseUrl;
    expect(baseUrl).toContain('127.0.0.1:9/v1');
    expect(baseUrl).not.toContain('pass');
    expect(baseUrl).not.toContain('sk-in-query');
    expect(JSON.stringify(r.body.result)).not.toContain('sk-in-query');
  });
});

describe('docs/auth-jwt.md: a token in the query string', () => {
  it('/rpc answers HTTP 200 with -32001 (data.httpStatus 401, appCode INVALID_TOKEN); /trpc and /mcp answer 401', async () => {
    const r = await rpc('mcp.echo', { message: 'x' }, undefined, `?access_token=${user}`);
    expect(r.status).toBe(200);
    expect(r.body.error).toMatchObject({ code: -32001, data: { httpStatus: 401, appCode: 'INVALID_TOKEN' } });
    const t = await s.fetch(`/trpc/mcp.echo?token=${user}&input=` + encodeURIComponent(JSON.stringify({ json: { message: 'x' } })));
    expect(t.status).toBe(401);
    const m = await s.fetch(`/mcp?id_token=${user}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'doc', version: '1' } },
      }),
    });
    expect(m.status).toBe(401);
    // The same token in the Authorization header is accepted: only where it was sent differs.
    expect((await rpc('mcp.echo', { message: 'x' }, user)).body.result).toEqual({ message: 'x' });
  });
});

describe('a start-up warning when nobody can sign in', () => {
  it("authType 'jwt' without a secret starts, and logs a warning saying nobody can sign in", async () => {
    const lines: string[] = [];
    const server = createServer(
      { port: 0, host: '127.0.0.1', storage: { type: 'memory' }, mcp: { auth: { authType: 'jwt' } } },
      { logger: createLogger('info', (l) => lines.push(l)) },
    );
    try {
      await server.start();
      expect(lines.join('\n')).toMatch(/nobody can sign in/i);
    } finally {
      await server.stop();
    }
  });

  it('a server where sign-in works logs no such warning', async () => {
    const lines: string[] = [];
    const server = createServer(
      { port: 0, host: '127.0.0.1', storage: { type: 'memory' }, jwt: { secret: SECRET }, mcp: { auth: { authType: 'jwt' } } },
      { logger: createLogger('info', (l) => lines.push(l)) },
    );
    try {
      await server.start();
      expect(lines.join('\n')).not.toMatch(/nobody can sign in/i);
    } finally {
      await server.stop();
    }
  });
});

describe('docs/configuration.md, docs/security.md, README: rate limiting ships on', () => {
  it('the default config has it on, and every document that states the default says on', async () => {
    const defaults = resolveConfig({});
    expect(defaults.mcp.rateLimiting).toMatchObject({ enabled: true, windowMs: 60000, maxRequests: 300, maxToolCalls: 120 });
    const read = (f: string) => readFile(new URL(`../../${f}`, import.meta.url), 'utf8');
    const [configuration, security, readme] = await Promise.all([
      read('docs/configuration.md'),
      read('docs/security.md'),
      read('README.md'),
    ]);
    expect(configuration).toContain('we ship rate limiting **on**');
    expect(configuration).toContain('| `rateLimiting` | `enabled: true, windowMs: 60000, maxRequests: 300, maxToolCalls: 120` |');
    expect(security).toContain('Rate limiting is **on by default**');
    expect(readme).toContain('gets 300 `/mcp` requests and 120 tool calls a minute');
    for (const doc of [configuration, security, readme])
      expect(doc).not.toMatch(/rate limiting \*\*off\*\*|rate limiting (is )?off by default/i);
  });
});

describe("README's repository layout", () => {
  it('names the storage backends there are', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const listed = /^packages\/core .*storage \(([^)]*)\)/m
      .exec(readme)?.[1]
      ?.split('|')
      .map((s) => s.trim());
    expect(listed).toEqual([...STORAGE_BACKENDS]);
  });
});
