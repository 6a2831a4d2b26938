import { describe, expect, it } from 'vitest';
import { initTRPC, TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import superjson from 'superjson';
import { z } from 'zod';
import { answerSingleCall, singleCallOf } from './singleCall.js';

// A router shaped like ours: superjson, an errorFormatter that reads ctx and input, one base
// middleware, queries, mutations, a subscription and a procedure answering an iterable.
interface Ctx {
  user: string | null;
}
const t = initTRPC.context<Ctx>().create({
  transformer: superjson,
  // Stacks differ by caller; ours carries none (our errorFormatter replaces data).
  isDev: false,
  errorFormatter: ({ shape, ctx, input }) => ({ ...shape, data: { ...shape.data, who: ctx?.user ?? null, sawInput: input !== undefined } }),
});
const base = t.procedure.use(({ ctx, next }) => next({ ctx: { ...ctx, seen: true } }));
const router = t.router({
  echo: base.input(z.object({ message: z.string().max(10) })).query(({ input }) => ({ message: input.message })),
  when: base.input(z.object({ at: z.date() })).query(({ input }) => ({ next: new Date(input.at.getTime() + 1000), tags: new Set(['a']) })),
  optional: base.input(z.object({ n: z.number() }).optional()).query(({ input }) => input?.n ?? null),
  secret: base.query(({ ctx }) => {
    if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'sign in' });
    return ctx.user;
  }),
  broken: base.query(() => {
    throw new Error('database exploded at /etc/secret');
  }),
  iterable: base.query(async function* () {
    yield 1;
  }),
  promises: base.query(() => ({ later: Promise.resolve(1) })),
  nested: t.router({ add: base.input(z.object({ a: z.number(), b: z.number() })).mutation(({ input }) => input.a + input.b) }),
  ticks: base.subscription(async function* () {
    yield 1;
  }),
});

const ORIGIN = 'http://127.0.0.1:3000';
const url = (path: string, input?: unknown) =>
  `${ORIGIN}/trpc/${path}${input === undefined ? '' : `?input=${encodeURIComponent(typeof input === 'string' ? input : JSON.stringify(superjson.serialize(input)))}`}`;

async function viaTrpc(req: Request, ctx: () => Promise<Ctx>): Promise<Response> {
  return fetchRequestHandler({
    endpoint: '/trpc',
    req,
    router,
    createContext: ctx,
    responseMeta: () => ({ headers: { 'x-extra': 'yes' } }),
  });
}

async function viaShortWay(req: Request, ctx: () => Promise<Ctx>): Promise<Response | undefined> {
  const call = singleCallOf(req, req.url, '/trpc', router);
  if (!call) return undefined;
  return answerSingleCall({
    router,
    call,
    body: () => req.text(),
    createContext: ctx,
    signal: req.signal,
    headersFor: () => ({ 'x-extra': 'yes' }),
    onError: () => undefined,
  });
}

const answer = async (res: Response) => ({
  status: res.status,
  body: await res.text(),
  type: res.headers.get('content-type'),
  vary: res.headers.get('vary'),
  extra: res.headers.get('x-extra'),
});

const anonymous = async (): Promise<Ctx> => ({ user: null });
const alice = async (): Promise<Ctx> => ({ user: 'alice' });
const failing = async (): Promise<Ctx> => {
  throw new TRPCError({ code: 'FORBIDDEN', message: 'no context for you' });
};

/** Requests the short way answers: every one must get tRPC's own answer, byte for byte. */
const answered: Array<[string, () => Request, () => Promise<Ctx>]> = [
  ['a query', () => new Request(url('echo', { message: 'hi' })), anonymous],
  [
    'a query with a JSON content type',
    () => new Request(url('echo', { message: 'hi' }), { headers: { 'content-type': 'application/json' } }),
    anonymous,
  ],
  [
    'a query with another content type',
    () => new Request(url('echo', { message: 'hi' }), { headers: { 'content-type': 'text/plain' } }),
    anonymous,
  ],
  ['superjson values both ways', () => new Request(url('when', { at: new Date('2026-01-01T00:00:00Z') })), anonymous],
  ['no input', () => new Request(url('optional')), anonymous],
  ['an empty input', () => new Request(url('optional', '')), anonymous],
  ['an input without superjson envelope', () => new Request(url('optional', '{"n":3}')), anonymous],
  ['malformed JSON input', () => new Request(url('echo', '{"json":')), anonymous],
  ['an input failing validation', () => new Request(url('echo', { message: 'far too long for this' })), anonymous],
  ['a wrong input type', () => new Request(url('echo', '{"json":{"message":42}}')), anonymous],
  ['a trailing slash', () => new Request(url('echo/', { message: 'hi' })), anonymous],
  ['a TRPCError', () => new Request(url('secret')), anonymous],
  ['a result after context', () => new Request(url('secret')), alice],
  ['an unexpected error', () => new Request(url('broken')), anonymous],
  ['an async iterable answer', () => new Request(url('iterable')), anonymous],
  ['an object of promises', () => new Request(url('promises')), anonymous],
  ['a failing context', () => new Request(url('echo', { message: 'hi' })), failing],
  [
    'a mutation',
    () =>
      new Request(url('nested.add'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(superjson.serialize({ a: 1, b: 2 })),
      }),
    anonymous,
  ],
  [
    'a mutation with a charset',
    () =>
      new Request(url('nested.add'), {
        method: 'POST',
        headers: { 'content-type': 'Application/JSON; charset=utf-8' },
        body: JSON.stringify(superjson.serialize({ a: 1, b: 2 })),
      }),
    anonymous,
  ],
  [
    'a mutation with malformed JSON',
    () => new Request(url('nested.add'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"json":{' }),
    anonymous,
  ],
  [
    'a mutation without body',
    () => new Request(url('nested.add'), { method: 'POST', headers: { 'content-type': 'application/json' } }),
    anonymous,
  ],
  [
    'a mutation with a JSON array',
    () => new Request(url('nested.add'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2]' }),
    anonymous,
  ],
];

/** Requests left to tRPC's adapter. */
const leftToTrpc: Array<[string, () => Request]> = [
  [
    'a batch',
    () =>
      new Request(
        `${ORIGIN}/trpc/echo,echo?batch=1&input=${encodeURIComponent('{"0":{"json":{"message":"a"}},"1":{"json":{"message":"b"}}}')}`,
      ),
  ],
  ['batch=1 on one path', () => new Request(`${ORIGIN}/trpc/echo?batch=1&input=${encodeURIComponent('{"0":{"json":{"message":"a"}}}')}`)],
  ['a streamed batch', () => new Request(url('echo', { message: 'hi' }), { headers: { 'trpc-accept': 'application/jsonl' } })],
  ['an Accept of JSON lines', () => new Request(url('echo', { message: 'hi' }), { headers: { accept: 'application/jsonl' } })],
  ['HEAD', () => new Request(url('echo'), { method: 'HEAD' })],
  ['GET of a mutation', () => new Request(url('nested.add', { a: 1, b: 2 }))],
  [
    'POST of a query',
    () => new Request(url('echo'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"json":{"message":"hi"}}' }),
  ],
  ['a subscription', () => new Request(url('ticks'))],
  ['an unknown procedure', () => new Request(url('nope'))],
  ['a percent-encoded path', () => new Request(`${ORIGIN}/trpc/ech%6F?input=${encodeURIComponent('{"json":{"message":"hi"}}')}`)],
  ['a form', () => new Request(url('nested.add'), { method: 'POST', body: new FormData() })],
  ['a POST without content type', () => new Request(url('nested.add'), { method: 'POST', body: '{}', headers: { 'content-type': '' } })],
  [
    'a GET with an octet-stream content type',
    () => new Request(url('echo', { message: 'hi' }), { headers: { 'content-type': 'application/octet-stream' } }),
  ],
  ['connection parameters', () => new Request(`${url('echo', { message: 'hi' })}&connectionParams=${encodeURIComponent('{}')}`)],
];

describe('the short way for one tRPC call', () => {
  it.each(answered)('answers %s exactly as tRPC does', async (_name, request, ctx) => {
    const ours = await viaShortWay(request(), ctx);
    expect(ours, 'the short way took this request').toBeDefined();
    const theirs = await viaTrpc(request(), ctx);
    expect(await answer(ours!)).toEqual(await answer(theirs));
  });

  it.each(leftToTrpc)('leaves %s to tRPC', (_name, request) => {
    expect(singleCallOf(request(), request().url, '/trpc', router)).toBeUndefined();
  });

  it('finds the call under another mount point', () => {
    const req = new Request(`${ORIGIN}/api/trpc/nested.add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(singleCallOf(req, req.url, '/api/trpc', router)).toMatchObject({ path: 'nested.add', type: 'mutation' });
  });

  it('hands the procedure the request signal', async () => {
    let seen: AbortSignal | undefined;
    const r = t.router({ q: t.procedure.query(({ signal }) => ((seen = signal), 1)) });
    const controller = new AbortController();
    const req = new Request(`${ORIGIN}/trpc/q`, { signal: controller.signal });
    const call = singleCallOf(req, req.url, '/trpc', r)!;
    await answerSingleCall({
      router: r,
      call,
      body: async () => '',
      createContext: anonymous,
      signal: req.signal,
      headersFor: () => ({}),
      onError: () => undefined,
    });
    controller.abort();
    expect(seen?.aborted).toBe(true);
  });

  it('reports each failure once, with the error tRPC would report', async () => {
    const reported: TRPCError[] = [];
    const req = new Request(url('broken'));
    const call = singleCallOf(req, req.url, '/trpc', router)!;
    await answerSingleCall({
      router,
      call,
      body: async () => '',
      createContext: anonymous,
      signal: req.signal,
      headersFor: () => ({}),
      onError: (e) => reported.push(e),
    });
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'INTERNAL_SERVER_ERROR' });
    expect(reported[0]!.cause?.message).toContain('database exploded');
  });
});
