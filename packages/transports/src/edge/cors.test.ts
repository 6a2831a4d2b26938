import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { resolveConfig, type ConfigInput } from '@ai-backend/core';
import { cors, withCorsHeaders } from './cors.js';
import { requestOrigin } from './requestFacts.js';

function app(corsConfig: NonNullable<ConfigInput>['cors']) {
  const config = resolveConfig({ cors: corsConfig, monitoring: { logging: { level: 'silent' } } });
  const a = new Hono();
  a.use(
    '*',
    cors(config.cors, (req) => requestOrigin(req, false)),
  );
  // A handler that builds its own Response (as /rpc does) and one that leaves it to the middleware.
  a.post('/own', (c) => new Response('{}', { headers: withCorsHeaders(c, { 'content-type': 'application/json' }) }));
  a.all('*', (c) => c.text('ok'));
  return a;
}
const req = (a: Hono, path: string, init: RequestInit = {}) => a.request(new Request('http://127.0.0.1:8000' + path, init));

describe('cors with an origin list', () => {
  const a = app({ origin: ['https://app.example'], credentials: true });

  it('echoes a listed origin with Vary, credentials and the exposed headers browsers need (session id, challenge, retry)', async () => {
    const res = await req(a, '/rpc', { headers: { origin: 'https://app.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    const exposed = res.headers.get('access-control-expose-headers')!.toLowerCase();
    for (const h of ['mcp-session-id', 'www-authenticate', 'mcp-protocol-version', 'retry-after']) expect(exposed).toContain(h);
  });

  it('gives an unlisted origin no CORS headers at all', async () => {
    const res = await req(a, '/rpc', { headers: { origin: 'https://evil.example' } });
    expect(res.status).toBe(200);
    for (const h of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers'])
      expect(res.headers.get(h)).toBeNull();
  });

  it('answers a preflight with methods (DELETE for MCP), the MCP and x-api-key headers, and max-age 600', async () => {
    const res = await req(a, '/mcp', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'DELETE' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('access-control-allow-methods')).toContain('DELETE');
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const h of ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'x-api-key'])
      expect(allowed).toContain(h);
    expect(res.headers.get('access-control-max-age')).toBe('600');
  });

  it('a preflight from an unlisted origin gets no Allow-Origin', async () => {
    const res = await req(a, '/mcp', { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers preflights on /.well-known/ to everyone (OAuth discovery), without credentials', async () => {
    const res = await req(a, '/.well-known/oauth-protected-resource', { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-max-age')).toBe('86400');
  });

  it('a handler building its own Response gets the headers once, through withCorsHeaders', async () => {
    const res = await req(a, '/own', { method: 'POST', headers: { origin: 'https://app.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('content-type')).toBe('application/json');
  });

  it('withCorsHeaders leaves headers alone when the request earned no CORS headers', async () => {
    const res = await req(a, '/own', { method: 'POST', headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('content-type')).toBe('application/json');
  });
});

describe('cors with the wildcard', () => {
  it("answers '*' without Vary and without credentials, even with no Origin", async () => {
    const a = app({ origin: ['*'] });
    const res = await req(a, '/rpc', { headers: { origin: 'https://anyone.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('vary')).toBeNull();
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect((await req(a, '/rpc')).headers.get('access-control-allow-origin')).toBe('*');
  });
});
