import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { resolveConfig, type ConfigInput } from '@ai-backend/core';
import { createBrowserGuard, type GuardedRoute } from './browserGuard.js';

const JWT = { mcp: { auth: { authType: 'jwt' as const } }, jwt: { secret: 's'.repeat(32) } };

/** /api is an API route that takes JSON only; /oauth/callback is neither. */
function app(config: ConfigInput) {
  const guard = createBrowserGuard(resolveConfig({ monitoring: { logging: { level: 'silent' } }, ...config }));
  const api: GuardedRoute = { family: 'jsonrpc', api: true, jsonOnly: true };
  const a = new Hono();
  a.use('/api', guard(api));
  a.use('/oauth/*', guard({ family: 'oauth', api: false, jsonOnly: false }));
  a.all('*', (c) => c.text('ok'));
  return a;
}
const get = (a: Hono, path: string, headers: Record<string, string> = {}, base = 'http://127.0.0.1:8000') =>
  a.request(new Request(base + path, { headers }));
const post = (a: Hono, headers: Record<string, string>, base = 'http://127.0.0.1:8000') =>
  a.request(new Request(base + '/api', { method: 'POST', headers, body: '{}' }));
const why = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;

describe('browserGuard on a loopback server without auth (the default)', () => {
  const a = app({ mcp: { auth: { authType: 'none' } } });

  it('accepts loopback Host names (any port) and the URL host of an in-process request', async () => {
    for (const host of ['127.0.0.1:8000', 'localhost:3000', '[::1]:8000', '127.0.0.2'])
      expect((await get(a, '/api', { host })).status).toBe(200);
    expect((await get(a, '/api')).status).toBe(200);
  });

  it('refuses a rebinding page: a foreign Host, with 403 in the route family shape and no CORS headers', async () => {
    const res = await get(a, '/api', { host: 'evil.example' });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: expect.any(Number), message: 'forbidden: host not allowed' },
    });
    expect((await get(a, '/api', {}, 'http://evil.example')).status).toBe(403);
  });

  it("accepts the server's own origin only: another port, localhost for 127.0.0.1, and 'null' are other origins", async () => {
    expect((await get(a, '/api', { host: '127.0.0.1:8000', origin: 'http://127.0.0.1:8000' })).status).toBe(200);
    for (const origin of ['http://127.0.0.1:9000', 'http://localhost:8000', 'https://127.0.0.1:8000', 'null', 'https://evil.example']) {
      const res = await get(a, '/api', { host: '127.0.0.1:8000', origin });
      expect(res.status, origin).toBe(403);
      expect(await why(res)).toBe('forbidden: origin not allowed');
    }
  });

  it('refuses cross-site and same-site browser requests without an Origin on API routes only', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const res = await get(a, '/api', { 'sec-fetch-site': site });
      expect(res.status).toBe(403);
      expect(await why(res)).toBe('forbidden: cross-site request without an origin');
      expect((await get(a, '/oauth/callback', { 'sec-fetch-site': site })).status).toBe(200);
    }
    expect((await get(a, '/api', { 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await get(a, '/api', { 'sec-fetch-site': 'none' })).status).toBe(200);
  });

  it('takes POST bodies on JSON-only routes as application/json only (415), so a cross-site POST needs a preflight', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
      const res = await post(a, { 'content-type': type });
      expect(res.status, type).toBe(415);
      expect(await why(res)).toBe('unsupported media type: send the body as application/json');
    }
    expect((await post(a, {})).status).toBe(415);
    expect((await post(a, { 'content-type': 'Application/JSON; charset=utf-8' })).status).toBe(200);
    // Not a JSON-only route: any type.
    expect(
      (
        await a.request(
          new Request('http://127.0.0.1:8000/oauth/token', {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: 'a=b',
          }),
        )
      ).status,
    ).toBe(200);
  });
});

describe('browserGuard on a public server with auth', () => {
  it('accepts any Host and any Origin when no origin list is configured (tokens guard it)', async () => {
    const a = app({ host: '0.0.0.0', ...JWT });
    expect((await get(a, '/api', { host: 'api.example.com', origin: 'https://other.example' })).status).toBe(200);
    expect((await get(a, '/api', { 'sec-fetch-site': 'cross-site' })).status).toBe(200);
  });

  it('with cors.origin or mcp.allowedOrigins, accepts those and its own origin, refuses the rest', async () => {
    const a = app({
      host: '0.0.0.0',
      ...JWT,
      cors: { origin: ['https://App.example'] },
      mcp: { auth: { authType: 'jwt' }, allowedOrigins: ['https://ide.example'] },
    });
    const from = (origin: string) => get(a, '/api', { host: 'api.example.com', origin });
    expect((await from('https://app.example')).status).toBe(200);
    expect((await from('https://ide.example')).status).toBe(200);
    expect((await from('http://api.example.com')).status).toBe(200);
    expect((await from('https://evil.example')).status).toBe(403);
  });

  it('mcp.allowedHosts: only the listed names (with or without port), loopback included only if listed', async () => {
    const a = app({ host: '0.0.0.0', ...JWT, mcp: { auth: { authType: 'jwt' }, allowedHosts: ['API.example.com', 'edge.example:8443'] } });
    expect((await get(a, '/api', { host: 'api.example.com:443' })).status).toBe(200);
    expect((await get(a, '/api', { host: 'edge.example:8443' })).status).toBe(200);
    expect((await get(a, '/api', { host: 'edge.example:9999' })).status).toBe(403);
    expect((await get(a, '/api', { host: '127.0.0.1:8000' })).status).toBe(403);
  });

  it('oauth.publicUrl counts as its own origin', async () => {
    const a = app({
      host: '0.0.0.0',
      ...JWT,
      cors: { origin: ['https://app.example'] },
      oauth: { publicUrl: 'https://auth.example.com/base' },
    });
    expect((await get(a, '/api', { host: 'internal:8000', origin: 'https://auth.example.com' })).status).toBe(200);
  });
});

describe('browserGuard behind a proxy', () => {
  it('reads forwarded origin, host and proto only with trustProxy', async () => {
    const headers = {
      host: '127.0.0.1:8000',
      'x-forwarded-host': 'app.example',
      'x-forwarded-proto': 'https',
      origin: 'https://app.example',
    };
    expect((await get(app({ mcp: { auth: { authType: 'none' } } }), '/api', headers)).status).toBe(403);
    expect((await get(app({ mcp: { auth: { authType: 'none' } }, trustProxy: true }), '/api', headers)).status).toBe(200);
    const spoofed = { host: '127.0.0.1:8000', 'x-forwarded-origin': 'http://127.0.0.1:8000', origin: 'https://evil.example' };
    expect((await get(app({ mcp: { auth: { authType: 'none' } } }), '/api', spoofed)).status).toBe(403);
  });
});
