/**
 * /console as served (in-process fetch and a real Node server): the strict headers on every asset,
 * `console.enabled: false` (nothing served, /favicon.ico included), and the developer sign-in of `serve --dev` (createServer's
 * consoleDevSignIn, and the link the built CLI prints).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SECRET = 'console-routes-secret-0123456789abcdef';
const CODE = 'a'.repeat(20) + 'B'.repeat(23);
const BIN = fileURLToPath(new URL('../../packages/cli/bin/ai-backend.js', import.meta.url));
const base = {
  host: '127.0.0.1',
  port: 0,
  storage: { type: 'memory' as const },
  jwt: { secret: SECRET },
  mcp: { auth: { authType: 'jwt' as const } },
  monitoring: { logging: { level: 'silent' as const } },
};

let server: AiBackendServer;
let url: string;
beforeAll(async () => {
  server = createServer(base, { consoleDevSignIn: { code: CODE } });
  url = (await server.start()).url;
});
afterAll(() => server.stop());

/** The same request in-process and over the real server. */
const both = (p: string, init?: RequestInit) =>
  Promise.all([server.fetch(new Request(`http://127.0.0.1${p}`, init)), fetch(url + p, init)]);

describe('/console assets', () => {
  it('every answer carries the strict CSP and anti-framing headers', async () => {
    for (const p of ['/console/', '/console/app.js', '/console/app.css', '/console/settings.json']) {
      for (const res of await both(p)) {
        expect(res.status, p).toBe(200);
        const csp = res.headers.get('content-security-policy')!;
        expect(csp).toMatch(/default-src 'none'/);
        expect(csp).toMatch(/script-src 'self'(;|$)/);
        expect(csp).toMatch(/style-src 'self'(;|$)/);
        expect(csp).toMatch(/frame-ancestors 'none'/);
        expect(res.headers.get('x-frame-options')).toBe('DENY');
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      }
    }
    const [js] = await both('/console/app.js');
    expect(js!.headers.get('content-type')).toMatch(/^text\/javascript/);
  });

  it('settings.json tells the sign-in options and nothing else', async () => {
    const [res] = await both('/console/settings.json');
    expect(await res!.json()).toEqual({ oauth: false, adminScope: 'mcp:admin', scopes: ['mcp', 'mcp:call'], devSignIn: true });
  });

  it("only the build's flat file names are served", async () => {
    for (const p of ['/console/nope.js', '/console/..%2Fpackage.json', '/console/%2e%2e/index.html', '/console/app.js/x']) {
      for (const res of await both(p)) expect(res.status, p).toBe(404);
    }
    const [redirect] = await both('/console', { redirect: 'manual' });
    expect(redirect!.status).toBe(302);
    expect(redirect!.headers.get('location')).toBe('/console/');
  });

  it("/favicon.ico is the console's icon while the console is on", async () => {
    for (const res of await both('/favicon.ico')) {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/x-icon');
      expect([...new Uint8Array(await res.arrayBuffer()).slice(0, 4)]).toEqual([0, 0, 1, 0]);
    }
  });

  it('console.enabled: false serves nothing under /console, nor /favicon.ico', async () => {
    const off = createServer({ ...base, console: { enabled: false } });
    for (const p of ['/console/', '/console/app.js', '/console/settings.json', '/favicon.ico']) {
      const res = await off.fetch(new Request(`http://127.0.0.1${p}`));
      expect(res.status, p).toBe(404);
      expect(await res.json()).toEqual({ error: 'not found' });
    }
    await off.stop();
  });

  it('without the JSON-RPC entry point the console is off (it calls /rpc): no /console, no /favicon.ico', async () => {
    const off = createServer({ ...base, protocols: { jsonRpc: false } });
    for (const p of ['/console/', '/favicon.ico']) expect((await off.fetch(new Request(`http://127.0.0.1${p}`))).status, p).toBe(404);
    await off.stop();
  });
});

describe('developer sign-in (serve --dev)', () => {
  const exchange = (code: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/console/dev-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ code }),
    });

  it('the code gives an administrator token; a wrong code gives nothing', async () => {
    const bad = await exchange('x'.repeat(43));
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ error: 'unknown sign-in code' });
    const ok = await exchange(CODE);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const { token } = (await ok.json()) as { token: string };
    const r = await fetch(`${url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'admin.overview', params: {} }),
    });
    expect(((await r.json()) as { result?: unknown }).result).toBeDefined();
  });

  it('another origin cannot exchange the code (the browser guard refuses it)', async () => {
    const res = await exchange(CODE, { origin: 'http://evil.example' });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('is refused on a server that is not bound to loopback, with a short code, or without jwt.secret', async () => {
    expect(() => createServer({ ...base, host: '0.0.0.0' }, { consoleDevSignIn: { code: CODE } })).toThrow(/loopback/);
    expect(() => createServer(base, { consoleDevSignIn: { code: 'short' } })).toThrow(/32 characters/);
    expect(() => createServer({ ...base, jwt: {} }, { consoleDevSignIn: { code: CODE } })).toThrow(/jwt.secret/);
  });

  it('without it there is no developer sign-in route', async () => {
    const plain = createServer(base);
    const res = await plain.fetch(
      new Request('http://127.0.0.1/console/dev-session', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: CODE }),
      }),
    );
    expect(res.status).toBe(404);
    expect(await (await plain.fetch(new Request('http://127.0.0.1/console/settings.json'))).json()).toMatchObject({ devSignIn: false });
    await plain.stop();
  });

  it('the link `serve --dev` prints signs the developer in as administrator (no JWT_SECRET configured)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-console-dev-'));
    let child: ChildProcess | undefined;
    try {
      child = spawn(process.execPath, [BIN, 'serve', '--dev', '--port', '0'], {
        cwd: dir,
        env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn' },
      });
      const link = await new Promise<string>((resolve, reject) => {
        let out = '';
        child!.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /console\s+(http:\/\/\S+\/console\/)#dev=([\w-]+)/.exec(out);
          if (m) resolve(`${m[1]}#dev=${m[2]}`);
        });
        child!.once('exit', (code) => reject(new Error(`serve --dev exited ${code}: ${out}`)));
      });
      const devUrl = new URL(link);
      const code = devUrl.hash.slice('#dev='.length);
      const res = await fetch(new URL('/console/dev-session', devUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code }),
      });
      const { token } = (await res.json()) as { token: string };
      const call = async (t: string) =>
        (await (
          await fetch(new URL('/rpc', devUrl), {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${t}` },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'admin.status', params: {} }),
          })
        ).json()) as { result?: unknown; error?: unknown };
      expect((await call(token)).result).toBeDefined();
      // The secret lives in that process only: a token minted with any other secret is refused.
      expect((await call(await mintDevToken({ secret: SECRET, sub: 'x', scopes: ['mcp:admin'] }))).error).toBeDefined();
    } finally {
      child?.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
