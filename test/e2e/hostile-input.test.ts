/**
 * Hostile input on every route that acts, in-process (`app.fetch`) and against a real listening
 * server: wrong content types, bodies over the limit (declared and chunked), deep nesting in JSON
 * and in superjson meta, foreign Origin and a rebinding Host. Each gets a clear 4xx in the
 * route's own error shape, with no library or stack text, and the server keeps serving.
 * (Memory under 50 MiB bodies, slow bodies and the SSE cap: hostile-input-server.test.ts.)
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '@ai-backend/core';
import { MODES, serverFor } from './helpers/testServer.js';

/** Every route family the edge guards, on one server (OAuth and the webhook switched on). */
export const HOSTILE_CONFIG: ConfigInput = {
  mcp: { auth: { authType: 'oauth' } },
  oauth: {
    encryptionKey: 'hostile-input-encryption-key-0123456789',
    providerClientId: 'hostile-client',
    providerClientSecret: 'hostile-secret',
    provider: { authorizationUrl: 'https://idp.invalid/authorize', tokenUrl: 'https://idp.invalid/token', userinfoUrl: 'https://idp.invalid/userinfo' },
  },
  billing: { webhookSecret: 'hostile-webhook-secret-0123456789abcdef' },
};

export interface RouteCase {
  path: string;
  /** A body the route accepts in form (content type and shape). */
  body: string;
  contentType: string;
  /** POSTs only as application/json. */
  jsonOnly: boolean;
  /** Its body limit with HOSTILE_CONFIG. */
  limit: number;
  headers?: Record<string, string>;
}

const MIB = 1024 * 1024;
export const ROUTES: RouteCase[] = [
  { path: '/rpc', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }), contentType: 'application/json', jsonOnly: true, limit: MIB },
  { path: '/trpc/system.writeFile', body: JSON.stringify({ json: { path: 'x.txt', content: 'x' } }), contentType: 'application/json', jsonOnly: true, limit: MIB },
  { path: '/typedrpc/system.writeFile', body: JSON.stringify({ json: { path: 'x.txt', content: 'x' } }), contentType: 'application/json', jsonOnly: true, limit: MIB },
  {
    path: '/mcp',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    contentType: 'application/json',
    jsonOnly: true,
    limit: MIB,
    headers: { accept: 'application/json, text/event-stream' },
  },
  { path: '/register', body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'x' }), contentType: 'application/json', jsonOnly: false, limit: 64 * 1024 },
  { path: '/oauth/token', body: 'grant_type=authorization_code&code=x&code_verifier=y&client_id=z', contentType: 'application/x-www-form-urlencoded', jsonOnly: false, limit: 64 * 1024 },
  { path: '/webhooks/purchase', body: JSON.stringify({ id: 'evt', type: 'purchase' }), contentType: 'application/json', jsonOnly: false, limit: 64 * 1024 },
];

/** Text that must never reach a caller: stack frames, library names and URLs, engine messages. */
export const LEAK = /\bat [\w.<>]+ \(|node_modules|Maximum call stack|superjson|zod|hono|@trpc|trpc\.io|github\.com|TypeError|SyntaxError|\.(ts|js|mjs):\d+/i;

const JSON_ROUTES = ROUTES.filter((r) => r.jsonOnly);
const TRPC_ROUTES = ROUTES.filter((r) => r.path.includes('rpc/'));

describe.each(MODES)('hostile input on every route (%s)', (mode) => {
  let s: Awaited<ReturnType<typeof serverFor>>;
  beforeAll(async () => {
    s = await serverFor(mode, HOSTILE_CONFIG);
  });
  afterAll(async () => s?.stop());

  const post = (r: RouteCase, init: { body?: BodyInit; headers?: Record<string, string> } = {}) =>
    s.call(r.path, { method: 'POST', body: init.body ?? r.body, headers: { 'content-type': r.contentType, ...r.headers, ...init.headers }, ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit);

  /** A clear 4xx: the expected status, JSON, no leaked text; and /health still answers. */
  async function expectRefused(res: Response, status: number, mentions?: RegExp): Promise<void> {
    const text = await res.text();
    expect(res.status, text).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(text).not.toMatch(LEAK);
    if (mentions) expect(text).toMatch(mentions);
    expect((await s.call('/health')).status).toBe(200);
  }

  it.each(ROUTES)('$path: a foreign Origin is refused with 403', async (r) => {
    await expectRefused(await post(r, { headers: { origin: 'http://evil.example' } }), 403, /origin not allowed/);
  });

  it.each(ROUTES)('$path: the server’s own origin is not refused for being a browser', async (r) => {
    const res = await post(r, { headers: { origin: s.url } });
    expect(res.status).not.toBe(403);
  });

  it.each(ROUTES)('$path: a rebinding Host is refused with 403', async (r) => {
    if (mode === 'in-process') {
      const res = await s.call(r.path, { method: 'POST', body: r.body, headers: { 'content-type': r.contentType, host: 'attacker.example:8000' } });
      // fetch Requests keep their URL's host; the guard reads the Host header first.
      await expectRefused(res, 403, /host not allowed/);
      return;
    }
    const { status, body } = await rawPost(s.url, r.path, { host: 'attacker.example', 'content-type': r.contentType, ...r.headers }, r.body);
    expect(status).toBe(403);
    expect(body).toMatch(/host not allowed/);
    expect(body).not.toMatch(LEAK);
  });

  it.each(JSON_ROUTES.flatMap((r) => ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''].map((type) => ({ ...r, type }))))(
    '$path: POST as "$type" is refused with 415',
    async (r) => {
      await expectRefused(await post(r, { headers: { 'content-type': r.type } }), 415, /application\/json/);
    },
  );

  it.each(JSON_ROUTES)('$path: application/json with a charset is accepted', async (r) => {
    const res = await post(r, { headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(res.status).not.toBe(415);
  });

  it.each(ROUTES)('$path: a declared body over the limit is refused with 413', async (r) => {
    await expectRefused(await post(r, { body: 'x'.repeat(r.limit + 1) }), 413, /exceeds/);
  });

  it.each(ROUTES)('$path: a chunked body over the limit is refused with 413', async (r) => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > r.limit * 2) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    await expectRefused(await post(r, { body }), 413, /exceeds/);
    // It stopped reading near the limit, not at the end of the body (over a socket, kernel buffers blur this).
    if (mode === 'in-process') expect(sent).toBeLessThanOrEqual(r.limit + 4 * chunk.byteLength);
  });

  it.each(JSON_ROUTES)('$path: JSON nested deeper than maxJsonDepth is refused with 400', async (r) => {
    const deep = '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}';
    await expectRefused(await post(r, { body: deep }), 400, /nesting/);
  });

  it.each(TRPC_ROUTES)('$path: deep nesting in the GET input is refused with 400', async (r) => {
    const input = encodeURIComponent('{"json":' + '['.repeat(500) + ']'.repeat(500) + '}');
    await expectRefused(await s.call(r.path.replace('writeFile', 'listFiles') + '?input=' + input), 400, /nesting/);
  });

  const metas: Array<[string, unknown]> = [
    ['50,000 annotations', { values: Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, ['Date']])) }],
    ['a path of 100,000 segments', { values: { ['a' + '.a'.repeat(100_000)]: ['undefined'] } }],
    ['50,000 referential equalities', { referentialEqualities: { a: Array.from({ length: 50_000 }, (_, i) => `b${i}`) } }],
    ['a custom annotation', { values: { a: [['custom', 'x']] } }],
    ['a malformed root', { referentialEqualities: ['a', { a: [['b']] }] }],
    ['deep nesting inside meta', { values: JSON.parse('{"a":' + '["map",{"b":'.repeat(200) + '["Date"]' + '}]'.repeat(200) + '}') }],
  ];
  it.each(TRPC_ROUTES.flatMap((r) => metas.map(([name, meta]) => ({ ...r, name, meta }))))('$path: superjson meta with $name is refused with 400, quickly', async (r) => {
    const t0 = performance.now();
    const res = await post(r, { body: JSON.stringify({ json: { path: 'x.txt', content: 'x' }, meta: r.meta }) });
    await expectRefused(res, 400, /meta|nesting/);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

/** A POST with headers fetch will not send as given (Host), over node:http. */
export function rawPost(base: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
