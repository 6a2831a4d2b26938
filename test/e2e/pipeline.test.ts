import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { CoreError, MemoryStorage, createLogger, publicProcedure, router, type ConfigInput } from '@ai-backend/core/internal';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { describeMatrix } from './helpers/describeMatrix.js';
import type { Mode } from './helpers/testServer.js';
import { RawMcp, readMcpReply } from './helpers/rawMcp.js';

/**
 * The request pipeline's promises on every entry point: one error shape (appCode, details and
 * Retry-After survive /trpc, /rpc and MCP tools and prompts), no library or stack text in any
 * answer, internal errors logged the same way everywhere, and a procedure's tRPC `signal`
 * aborted by a client disconnect on /rpc and by notifications/cancelled or a disconnect on /mcp.
 */

const started = new Map<string, () => void>();
const aborted = new Map<string, string>();
/** Resolves once the named slow call is running. */
const whenStarted = (key: string) => new Promise<void>((resolve) => started.set(key, resolve));

const probe = router({
  paid: publicProcedure
    .meta({ description: 'Always short of tokens', mcp: { name: 'paid', public: true, prompt: { name: 'paidPrompt' } } })
    .input(z.object({ n: z.number().optional() }).optional())
    .query(() => {
      throw new CoreError('PAYMENT_REQUIRED', 'not enough tokens', { details: { needed: 5, balance: 1 }, headers: { 'Retry-After': '7' } });
    }),
  crash: publicProcedure.meta({ description: 'Fails unexpectedly', mcp: { name: 'crash', public: true } }).query(() => {
    throw new Error('db down at postgres://admin:hunter2@10.0.0.5/prod');
  }),
  slow: publicProcedure
    .meta({ description: 'Waits until cancelled', mcp: { name: 'slow', public: true } })
    .input(z.object({ key: z.string() }))
    .query(({ input, signal, ctx }) => {
      if (!signal) throw new Error('no signal');
      // The tRPC signal and ctx.req.signal are the same request's.
      const req = ctx.req.signal;
      return new Promise((resolve) => {
        const done = (why: string) => {
          aborted.set(input.key, why);
          resolve('cancelled');
        };
        signal.addEventListener('abort', () => done('signal'), { once: true });
        req.addEventListener('abort', () => aborted.has(input.key) || done('ctx.req.signal'), { once: true });
        started.get(input.key)?.();
        setTimeout(() => resolve('timeout'), 20_000).unref();
      });
    }),
});

const CONFIG: ConfigInput = { mcp: { auth: { authType: 'none' } }, customRouters: { probe } };

interface Harness {
  server: AiBackendServer;
  call: (path: string, init?: RequestInit) => Promise<Response>;
  url: string;
  logs: string[];
  stop: () => Promise<void>;
}

async function harness(mode: Mode): Promise<Harness> {
  const logs: string[] = [];
  const server = createServer(
    { port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'warn' } }, ...CONFIG },
    { storage: new MemoryStorage(), logger: createLogger('warn', (l) => logs.push(l)) },
  );
  if (mode === 'listening') {
    const { url } = await server.start();
    return { server, url, logs, call: (p, init) => fetch(url + p, init), stop: () => server.stop() };
  }
  await server.ready();
  const url = 'http://127.0.0.1:8000';
  return { server, url, logs, call: (p, init) => server.fetch(new Request(url + p, init)), stop: () => server.stop() };
}

const json = { 'content-type': 'application/json' };
const rpcBody = (method: string, params: unknown = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

/** Text no answer may contain: library messages, stacks, file paths, our secrets. */
function expectClean(text: string) {
  expect(text).not.toMatch(
    /Maximum call stack|stack|node_modules|at \w+ \(|https?:\/\/(?!127\.0\.0\.1)|hunter2|postgres:|Unexpected token|superjson/i,
  );
}

describeMatrix('one error shape on every entry point', (mode) => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(mode);
  });
  afterAll(() => h?.stop());

  const want = { code: 'PAYMENT_REQUIRED', appCode: 'PAYMENT_REQUIRED', details: { needed: 5, balance: 1 }, retryAfterSec: 7 };

  it('/trpc and /typedrpc: appCode, details, retryAfterSec in data; Retry-After header', async () => {
    for (const prefix of ['/trpc', '/typedrpc']) {
      const res = await h.call(`${prefix}/probe.paid`);
      expect(res.status).toBe(402);
      expect(res.headers.get('retry-after')).toBe('7');
      const body = (await res.json()) as any;
      expect(body.error.json.message).toBe('not enough tokens');
      expect(body.error.json.data).toMatchObject(want);
    }
  });

  it('/rpc: the same fields in error.data; Retry-After header', async () => {
    const res = await h.call('/rpc', { method: 'POST', headers: json, body: rpcBody('probe.paid') });
    expect(res.headers.get('retry-after')).toBe('7');
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: -32002, message: 'not enough tokens', data: want });
  });

  it('MCP tools/call: a tool error whose structured error keeps appCode, details and Retry-After', async () => {
    const mcp = new RawMcp(h.url, undefined, h.call);
    await mcp.initialize();
    const reply = await mcp.callTool('paid', {});
    const result = reply.message?.result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toBe('PAYMENT_REQUIRED: not enough tokens');
    expect(result._meta['ai-backend/error']).toMatchObject({ message: 'not enough tokens', ...want });
    expect(result.structuredContent.error).toMatchObject(want);
  });

  it('MCP prompts/get: a JSON-RPC error with the same data', async () => {
    const mcp = new RawMcp(h.url, undefined, h.call);
    await mcp.initialize();
    const reply = await mcp.send('prompts/get', { name: 'paidPrompt', arguments: {} });
    // Same message and data as /rpc; the code differs: the v2 MCP SDK never emits -32002 (once
    // "resource not found", now -32602 per SEP-2164) and rewrites a handler's -32002, which is
    // core's PAYMENT_REQUIRED code, to -32602. data.appCode keeps the meaning (docs/mcp.md).
    expect(reply.message?.error).toMatchObject({ code: -32602, message: 'not enough tokens', data: want });
  });

  it('an unexpected error is "internal error" everywhere, logged once per entry point the same way', async () => {
    h.logs.length = 0;
    const trpc = await h.call('/trpc/probe.crash');
    expect(trpc.status).toBe(500);
    const trpcText = await trpc.text();
    expect(JSON.parse(trpcText).error.json.message).toBe('internal error');
    const rpcText = await (await h.call('/rpc', { method: 'POST', headers: json, body: rpcBody('probe.crash') })).text();
    expect(JSON.parse(rpcText).error.message).toBe('internal error');
    const mcp = new RawMcp(h.url, undefined, h.call);
    await mcp.initialize();
    const tool = await mcp.callTool('crash', {});
    expect(tool.message?.result.content[0].text).toBe('INTERNAL_SERVER_ERROR: internal error');
    for (const text of [trpcText, rpcText, JSON.stringify(tool.message)]) expectClean(text);
    const logged = h.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'procedure failed');
    expect(logged.map((l) => `${l.transport} ${l.path}`).sort()).toEqual(['mcp probe.crash', 'rpc probe.crash', 'trpc probe.crash']);
    expect(logged.every((l) => l.error === 'db down at postgres://admin:hunter2@10.0.0.5/prod')).toBe(true);
  });

  it('parser and superjson failures answer a clear 4xx without library text', async () => {
    const deep = '{"json":' + '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000) + '}';
    const meta = JSON.stringify({ json: { key: 'x' }, meta: { values: { key: [['custom', 'nope']] } } });
    const bodies = [
      ['/trpc/probe.slow', '{not json'],
      ['/trpc/probe.slow', deep],
      ['/trpc/probe.slow', meta],
    ] as const;
    for (const [path, body] of bodies) {
      // Queries by GET carry the input in the URL.
      const res = await h.call(`${path}?input=${encodeURIComponent(body)}`);
      expect(res.status, body.slice(0, 40)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const text = await res.text();
      expectClean(text);
    }
  });
});

describe('AbortSignal: /rpc disconnect, MCP cancel and disconnect', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness('listening');
  });
  afterAll(() => h?.stop());

  it('/rpc: the client going away aborts the procedure signal', async () => {
    const running = whenStarted('rpc');
    const ac = new AbortController();
    const pending = h
      .call('/rpc', { method: 'POST', headers: json, body: rpcBody('probe.slow', { key: 'rpc' }), signal: ac.signal })
      .catch(() => 'aborted');
    await running;
    ac.abort();
    expect(await pending).toBe('aborted');
    await expect.poll(() => aborted.get('rpc'), { timeout: 5000 }).toBe('signal');
  });

  it('/trpc: the same', async () => {
    const running = whenStarted('trpc');
    const ac = new AbortController();
    const input = encodeURIComponent(JSON.stringify({ json: { key: 'trpc' } }));
    const pending = h.call(`/trpc/probe.slow?input=${input}`, { signal: ac.signal }).catch(() => 'aborted');
    await running;
    ac.abort();
    await pending;
    await expect.poll(() => aborted.get('trpc'), { timeout: 5000 }).toBe('signal');
  });

  it('MCP: notifications/cancelled (the SDK client aborting a call) aborts the procedure signal', async () => {
    const client = new Client({ name: 'cancel-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(h.url + '/mcp')));
    try {
      const running = whenStarted('mcp-cancel');
      const ac = new AbortController();
      const call = client
        .callTool({ name: 'slow', arguments: { key: 'mcp-cancel' } }, undefined, { signal: ac.signal })
        .catch(() => 'cancelled');
      await running;
      ac.abort('user cancelled');
      expect(await call).toBe('cancelled');
      await expect.poll(() => aborted.get('mcp-cancel'), { timeout: 5000 }).toBe('signal');
    } finally {
      await client.close();
    }
  });

  it('MCP: the HTTP connection carrying the call closing aborts the procedure signal', async () => {
    const mcp = new RawMcp(h.url);
    await mcp.initialize();
    const running = whenStarted('mcp-drop');
    const ac = new AbortController();
    const pending = fetch(h.url + '/mcp', {
      method: 'POST',
      headers: mcp.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'slow', arguments: { key: 'mcp-drop' } } }),
      signal: ac.signal,
    })
      .then(readMcpReply)
      .catch(() => 'dropped');
    await running;
    ac.abort();
    expect(await pending).toBe('dropped');
    await expect.poll(() => aborted.get('mcp-drop'), { timeout: 5000 }).toBe('signal');
  });
});
