// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { router, publicProcedure, type AppRouter } from '@ai-backend/core';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { describeMatrix } from './helpers/describeMatrix.js';

/** A custom namespace added by the operator: it must show up on all three entry points. */
const weather = router({
  forecast: publicProcedure
    .meta({ description: 'Forecast for a city', mcp: { name: 'forecast', public: true } })
    .input(z.object({ city: z.string().min(1) }))
    .query(({ input }) => ({ city: input.city, sky: input.city.length % 2 ? 'sunny' : 'cloudy' })),
  when: publicProcedure.query(() => ({ at: new Date('2026-01-02T03:04:05Z') })),
});

/** The router type a client of this server sees for the custom namespace. */
const weatherApp = router({ weather });

let s: TestServer;
describeMatrix('entry points', (mode) => {
  beforeAll(async () => {
    s = await startTestServer({ mcp: { auth: { authType: 'none' } }, customRouters: { weather } }, mode);
  });
  afterAll(() => s.stop());

  describe('tRPC (@trpc/client + superjson)', () => {
    for (const endpoint of ['/trpc', '/typedrpc']) {
      it(`serves queries and batches on ${endpoint}`, async () => {
        const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: s.url + endpoint, transformer: superjson })] });
        const [greeting, echo] = await Promise.all([
          client.mcp.greeting.query({ name: 'Ada', language: 'de' }),
          client.mcp.echo.query({ message: 'hi' }),
        ]);
        expect(greeting).toEqual({ greeting: 'Hallo, Ada!', language: 'de' });
        expect(echo).toEqual({ message: 'hi' });
      });
    }

    it('keeps types through superjson (Date) on a custom router', async () => {
      const client = createTRPCClient<typeof weatherApp>({ links: [httpLink({ url: s.url + '/trpc', transformer: superjson })] });
      const r = await client.weather.when.query();
      expect(r.at).toBeInstanceOf(Date);
      expect(r.at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    });

    it('reports invalid input as BAD_REQUEST with zod issues, no stack', async () => {
      const client = createTRPCClient<AppRouter>({ links: [httpLink({ url: s.url + '/trpc', transformer: superjson })] });
      const err = await client.mcp.greeting.query({ name: 'x', language: 'xx' as 'en' }).catch((e) => e);
      expect(err).toBeInstanceOf(TRPCClientError);
      expect(err.data.code).toBe('BAD_REQUEST');
      expect(err.data.httpStatus).toBe(400);
      expect(err.data.issues[0].path).toEqual(['language']);
      expect(JSON.stringify(err.shape)).not.toMatch(/at .*\.ts:\d+/);
    });

    it('needs an administrator for admin procedures even with authType none', async () => {
      const client = createTRPCClient<AppRouter>({ links: [httpLink({ url: s.url + '/trpc', transformer: superjson })] });
      const err = await client.admin.status.query({ detailed: false }).catch((e) => e);
      expect(err.data.code).toBe('UNAUTHORIZED');
    });
  });

  describe('JSON-RPC 2.0 (/rpc)', () => {
    const post = (body: unknown) =>
      s.fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });

    it('answers a single request', async () => {
      const res = await post({ jsonrpc: '2.0', id: 7, method: 'system.test', params: { message: 'ping' } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 7, result: { message: 'ping' } });
    });

    it('answers a batch, skipping notifications, with standard errors', async () => {
      const res = await post([
        { jsonrpc: '2.0', id: 1, method: 'mcp.greeting', params: { name: 'Zoé', language: 'fr' } },
        { jsonrpc: '2.0', method: 'mcp.echo', params: { message: 'notification' } },
        { jsonrpc: '2.0', id: 'b', method: 'nope.nothing' },
        { jsonrpc: '2.0', id: 3, method: 'mcp.greeting', params: { name: 42 } },
        { jsonrpc: '1.0', id: 4, method: 'mcp.echo' },
        { jsonrpc: '2.0', id: 5, method: 'weather.forecast', params: { city: 'Oslo' } },
      ]);
      const out = (await res.json()) as Array<{ id: unknown; result?: unknown; error?: { code: number; data?: any } }>;
      expect(out).toHaveLength(5);
      const byId = new Map(out.map((r) => [r.id, r]));
      expect(byId.get(1)!.result).toEqual({ greeting: 'Bonjour, Zoé!', language: 'fr' });
      expect(byId.get('b')!.error!.code).toBe(-32601);
      expect(byId.get(3)!.error!.code).toBe(-32602);
      expect(byId.get(3)!.error!.data.issues[0].path).toEqual(['name']);
      expect(byId.get(4)!.error!.code).toBe(-32600);
      expect(byId.get(5)!.result).toEqual({ city: 'Oslo', sky: 'cloudy' });
    });

    it('gives a notification-only request no body', async () => {
      const res = await post({ jsonrpc: '2.0', method: 'mcp.echo', params: { message: 'x' } });
      expect(res.status).toBe(204);
      expect(await res.text()).toBe('');
    });

    it('maps application errors with the tRPC code in error.data.code', async () => {
      const res = await post({ jsonrpc: '2.0', id: 1, method: 'admin.status', params: {} });
      const body = (await res.json()) as any;
      expect(body.error.code).toBe(-32001);
      expect(body.error.data.code).toBe('UNAUTHORIZED');
    });

    it.each([
      ['malformed JSON', '{"jsonrpc":"2.0",', -32700],
      ['an empty batch', '[]', -32600],
      ['a scalar', '42', -32600],
      ['params that are not an object', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.echo', params: [1] }), -32602],
      ['deep nesting', '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}', -32700],
    ])('refuses %s with a clear error and keeps serving', async (_name, body, code) => {
      const res = await post(body);
      const out = (await res.json()) as any;
      expect(out.error.code).toBe(code);
      const again = await post({ jsonrpc: '2.0', id: 2, method: 'system.test', params: {} });
      expect(((await again.json()) as any).result).toEqual({ message: 'test' });
    });

    it('refuses an oversized body with 413', async () => {
      const res = await post(
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.echo', params: { message: 'x'.repeat(2 * 1024 * 1024) } }),
      );
      expect(res.status).toBe(413);
    });
  });

  describe('MCP (official SDK client over Streamable HTTP)', () => {
    it('initializes, lists and calls tools including a custom router tool', async () => {
      const client = new Client({ name: 'e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(s.url + '/mcp')));
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of ['greeting', 'ping', 'echo', 'currentSystemTime', 'getResources', 'readResource', 'forecast'])
        expect(names).toContain(n);
      const greeting = tools.find((t) => t.name === 'greeting')!;
      expect(greeting.inputSchema.properties).toHaveProperty('language');
      const r = await client.callTool({ name: 'greeting', arguments: { name: 'Bob', language: 'es' } });
      expect(JSON.parse((r.content as any)[0].text)).toEqual({ greeting: 'Hola, Bob!', language: 'es' });
      const f = await client.callTool({ name: 'forecast', arguments: { city: 'Rome' } });
      expect(JSON.parse((f.content as any)[0].text).city).toBe('Rome');
      const bad = await client.callTool({ name: 'greeting', arguments: { name: 5 } });
      expect(bad.isError).toBe(true);
      await client.close();
    });

    it('answers 400 without a session id and 404 for an unknown one', async () => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      expect((await s.fetch('/mcp', { method: 'POST', headers, body })).status).toBe(400);
      expect((await s.fetch('/mcp', { method: 'POST', headers: { ...headers, 'mcp-session-id': 'nope' }, body })).status).toBe(404);
    });

    it('refuses a foreign Origin on a loopback-bound server (DNS rebinding)', async () => {
      const res = await s.fetch('/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: 'https://evil.example' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(res.status).toBe(403);
    });
  });

  describe('health', () => {
    it('answers liveness and readiness', async () => {
      const live = await s.fetch('/health');
      expect(live.status).toBe(200);
      expect(((await live.json()) as any).status).toBe('ok');
      const ready = await s.fetch('/health/ready');
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as any).checks.storage.ok).toBe(true);
    });
  });

  describe('protected-resource metadata without OAuth', () => {
    it('a JWT-only server still serves the document its 401 challenges name', async () => {
      const jwt = await startTestServer(
        { mcp: { auth: { authType: 'jwt' } }, jwt: { secret: 'j'.repeat(32), issuer: 'https://issuer.example' } },
        mode,
      );
      try {
        const res = await jwt.fetch('/mcp', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
          }),
        });
        expect(res.status).toBe(200);
        const call = await jwt.fetch('/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': res.headers.get('mcp-session-id')!,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x' } } }),
        });
        expect(call.status).toBe(401);
        const url = /resource_metadata="([^"]+)"/.exec(call.headers.get('www-authenticate')!)![1]!;
        const prm = (await (await fetch(url)).json()) as any;
        expect(prm.resource).toBe(`${jwt.url}/mcp`);
        expect(prm.authorization_servers).toEqual(['https://issuer.example']);
      } finally {
        await jwt.stop();
      }
    });
  });

  describe('MCP responseMode json', () => {
    it('answers tool calls with single JSON bodies, and the SDK client works with them', async () => {
      const j = await startTestServer({ mcp: { auth: { authType: 'none' }, responseMode: 'json' } }, mode);
      try {
        const client = new Client({ name: 'json-mode', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(j.url + '/mcp')));
        const r = await client.callTool({ name: 'echo', arguments: { message: 'plain' } });
        expect(JSON.parse((r.content as any)[0].text)).toEqual({ message: 'plain' });
        const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
        const raw = await j.fetch('/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sessionId,
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'ping', arguments: {} } }),
        });
        expect(raw.headers.get('content-type')).toContain('application/json');
        expect(((await raw.json()) as any).result.content[0].text).toContain('pong');
        await client.close();
      } finally {
        await j.stop();
      }
    });
  });

  describe('tokens in the query string', () => {
    it('are refused on /trpc and /rpc like any bad credential', async () => {
      const trpc = await s.fetch('/trpc/mcp.echo?access_token=abc&input=' + encodeURIComponent(JSON.stringify({ json: { message: 'x' } })));
      expect(trpc.status).toBe(401);
      const rpcRes = await s.fetch('/rpc?token=abc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
      });
      expect(((await rpcRes.json()) as any).error.data.code).toBe('UNAUTHORIZED');
      // The name percent-encoded is the same parameter once decoded (`access_tok%65n` is `access_token`).
      const encoded = await s.fetch('/rpc?access_tok%65n=abc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
      });
      expect(((await encoded.json()) as any).error.data.code).toBe('UNAUTHORIZED');
      const plain = await s.fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
      });
      expect(((await plain.json()) as any).result).toEqual({ message: 'test' });
    });
  });
});
