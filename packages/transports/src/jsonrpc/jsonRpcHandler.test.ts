import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { z } from 'zod';
import {
  CoreError,
  createRuntime,
  entryGateway,
  MemoryStorage,
  publicProcedure,
  resolveConfig,
  router,
  type Runtime,
} from '@ai-backend/core/internal';
import { jsonRpcHandler } from './jsonRpcHandler.js';

/** A custom namespace whose calls the tests count (notifications run but are not answered). */
let ran = 0;
const probe = router({
  add: publicProcedure.input(z.object({ a: z.number(), b: z.number() })).query(({ input }) => (ran++, input.a + input.b)),
  square: publicProcedure.input(z.number()).query(({ input }) => input * input),
  nothing: publicProcedure.query(() => undefined),
  busy: publicProcedure.query(() => {
    throw new CoreError('RATE_LIMITED', 'slow down', { headers: { 'Retry-After': '9' } });
  }),
  ticks: publicProcedure.subscription(async function* () {
    yield 1;
  }),
});

let runtime: Runtime;
let app: Hono;
beforeAll(async () => {
  const config = resolveConfig({
    mcp: { auth: { authType: 'none' } },
    customRouters: { probe },
    limits: { maxBatchSize: 3, bodyLimit: 2048, maxJsonDepth: 8 },
    monitoring: { logging: { level: 'silent' } },
  });
  runtime = await createRuntime(config, { storage: new MemoryStorage() });
  app = new Hono();
  app.post(
    '/rpc',
    jsonRpcHandler(async () => entryGateway(runtime)),
  );
});
afterAll(() => runtime.close());

const post = (body: unknown) =>
  app.request('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const call = async (body: unknown) => {
  const res = await post(body);
  return { status: res.status, headers: res.headers, body: res.status === 204 ? null : ((await res.json()) as any) };
};
const req = (id: unknown, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params === undefined ? {} : { params }),
});

describe('jsonRpcHandler', () => {
  it('answers with the id as sent: number, string, null', async () => {
    for (const id of [7, 'abc', 1.5, null])
      expect((await call(req(id, 'probe.add', { a: 1, b: 2 }))).body).toEqual({ jsonrpc: '2.0', id, result: 3 });
  });

  it('takes positional params holding the input as their one element; [] is no input', async () => {
    expect((await call(req(1, 'probe.square', [4]))).body.result).toBe(16);
    expect((await call(req(1, 'probe.nothing', []))).body).toEqual({ jsonrpc: '2.0', id: 1, result: null });
    expect((await call(req(1, 'probe.square', [4, 5]))).body.error.code).toBe(-32602);
    expect((await call(req(1, 'probe.square', 4))).body.error.code).toBe(-32602);
  });

  it('refuses a bad envelope as an invalid request: wrong version, no method, an object id', async () => {
    expect((await call({ jsonrpc: '1.0', id: 1, method: 'probe.add' })).body.error).toMatchObject({ code: -32600 });
    expect((await call({ jsonrpc: '2.0', id: 2 })).body).toMatchObject({ id: 2, error: { code: -32600 } });
    expect((await call({ jsonrpc: '2.0', id: { x: 1 }, method: 'probe.add' })).body).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('method not found for unknown methods and for subscriptions, the name bounded', async () => {
    const long = 'x'.repeat(1000);
    const r = (await call(req(1, long))).body;
    expect(r.error.code).toBe(-32601);
    expect(r.error.message.length).toBeLessThan(250);
    expect((await call(req(1, 'probe.ticks'))).body.error.code).toBe(-32601);
  });

  it('runs a notification and answers 204 with no body', async () => {
    const before = ran;
    const res = await call({ jsonrpc: '2.0', method: 'probe.add', params: { a: 1, b: 1 } });
    expect(res.status).toBe(204);
    expect(ran).toBe(before + 1);
    // A notification with bad params or an unknown method is dropped silently, as the spec says.
    expect((await call({ jsonrpc: '2.0', method: 'probe.add', params: 3 })).status).toBe(204);
    expect((await call({ jsonrpc: '2.0', method: 'nope' })).status).toBe(204);
  });

  it('answers a batch in one array without the notifications, and 204 for a batch of notifications only', async () => {
    const r = await call([
      req(1, 'probe.add', { a: 1, b: 1 }),
      { jsonrpc: '2.0', method: 'probe.add', params: { a: 0, b: 0 } },
      req('x', 'nope'),
    ]);
    expect(r.body).toHaveLength(2);
    expect(r.body.find((m: any) => m.id === 1).result).toBe(2);
    expect(r.body.find((m: any) => m.id === 'x').error.code).toBe(-32601);
    expect((await call([{ jsonrpc: '2.0', method: 'probe.nothing' }])).status).toBe(204);
  });

  it('refuses an empty batch and one over limits.maxBatchSize, running none of it', async () => {
    expect((await call([])).body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'empty batch' } });
    const before = ran;
    const over = await call([1, 2, 3, 4].map((i) => req(i, 'probe.add', { a: i, b: i })));
    expect(over.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch larger than 3' } });
    expect(ran).toBe(before);
  });

  it('non-object members of a batch are each an invalid request', async () => {
    const r = await call([1, 'x', req(3, 'probe.add', { a: 1, b: 2 })]);
    expect(r.body.map((m: any) => m.error?.code ?? m.result)).toEqual([-32600, -32600, 3]);
  });

  it('a body that is not JSON is HTTP 400 with -32700; an oversized one 413; too deep 400', async () => {
    const bad = await call('{"jsonrpc":');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error: malformed JSON' } });
    const big = await call(JSON.stringify(req(1, 'probe.add', { a: 1, b: 2, pad: 'x'.repeat(3000) })));
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe(-32600);
    const deep = await call('['.repeat(9) + ']'.repeat(9));
    expect(deep.status).toBe(400);
  });

  it('an application error keeps its code in data and its Retry-After on the HTTP answer', async () => {
    const r = await call(req(1, 'probe.busy'));
    expect(r.status).toBe(200);
    expect(r.body.error.data).toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(r.headers.get('retry-after')).toBe('9');
  });

  it('invalid input is -32602 with the issues', async () => {
    const r = (await call(req(1, 'probe.add', { a: 'one', b: 2 }))).body;
    expect(r.error.code).toBe(-32602);
    expect(r.error.data.issues[0].path).toEqual(['a']);
  });
});
