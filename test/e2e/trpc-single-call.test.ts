import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import superjson from 'superjson';
import { z } from 'zod';
import { mintDevToken } from '@ai-backend/auth';
import { CoreError, publicProcedure, protectedProcedure, router } from '@ai-backend/core';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { describeMatrix } from './helpers/describeMatrix.js';

/**
 * /trpc answers one call the short way (transports/src/trpc/singleCall.ts) and a batch through
 * tRPC's own adapter. The same call sent both ways must get the same answer on our real router:
 * body (our errorFormatter, superjson), status and the headers our errors ask for.
 */
const SECRET = 'trpc-single-call-secret-0123456789abcdef';
const custom = router({
  when: publicProcedure
    .input(z.object({ at: z.date() }))
    .query(({ input }) => ({ later: new Date(input.at.getTime() + 60_000), tags: new Set(['a', 'b']) })),
  add: publicProcedure.input(z.object({ a: z.number(), b: z.number() })).mutation(({ input }) => ({ sum: input.a + input.b })),
  mine: protectedProcedure.query(({ ctx }) => ({ sub: ctx.identity.sub })),
  busy: publicProcedure.mutation(() => {
    throw new CoreError('RATE_LIMITED', 'slow down', { headers: { 'Retry-After': '7' } });
  }),
  broken: publicProcedure.query(() => {
    throw new Error('disk on fire at /var/lib/secret');
  }),
});

const enc = (v: unknown) => encodeURIComponent(JSON.stringify(superjson.serialize(v)));

interface Case {
  name: string;
  path: string;
  type: 'query' | 'mutation';
  input?: unknown;
  /** Raw JSON text of the input instead of superjson's serialization of `input`. */
  raw?: string;
  token?: 'user' | 'bad';
  /** The status both ways must answer (so each case shows what its name says). */
  status: number;
  /** A header the answer must carry. */
  header?: string;
}

const CASES: Case[] = [
  { name: 'a built-in query', path: 'system.test', type: 'query', input: { message: 'hi' }, status: 200 },
  { name: 'a query without input (its default)', path: 'system.test', type: 'query', status: 200 },
  { name: 'superjson Date and Set', path: 'custom.when', type: 'query', input: { at: new Date('2026-01-02T03:04:05Z') }, status: 200 },
  { name: 'a mutation', path: 'custom.add', type: 'mutation', input: { a: 2, b: 3 }, status: 200 },
  { name: 'invalid input (zod issues)', path: 'custom.add', type: 'mutation', input: { a: 'two', b: 3 }, status: 400 },
  { name: 'malformed JSON', path: 'custom.when', type: 'query', raw: '{"json":', status: 400 },
  {
    name: 'an anonymous caller on a protected procedure (401 + challenge)',
    path: 'custom.mine',
    type: 'query',
    status: 401,
    header: 'www-authenticate',
  },
  { name: 'a signed-in caller', path: 'custom.mine', type: 'query', token: 'user', status: 200 },
  {
    name: 'a bad token (401 + invalid_token challenge)',
    path: 'system.test',
    type: 'query',
    input: { message: 'hi' },
    token: 'bad',
    status: 401,
    header: 'www-authenticate',
  },
  {
    name: 'an administrator procedure for a user (403)',
    path: 'admin.status',
    type: 'query',
    input: { detailed: false },
    token: 'user',
    status: 403,
  },
  { name: 'a CoreError with Retry-After', path: 'custom.busy', type: 'mutation', status: 429, header: 'retry-after' },
  { name: 'an unexpected error (no message, no stack)', path: 'custom.broken', type: 'query', status: 500 },
];

let s: TestServer;
let userToken: string;

function requests(c: Case): { single: [string, RequestInit]; batch: [string, RequestInit] } {
  const text = c.raw ?? (c.input === undefined ? undefined : JSON.stringify(superjson.serialize(c.input)));
  const auth: Record<string, string> =
    c.token === 'user' ? { authorization: `Bearer ${userToken}` } : c.token === 'bad' ? { authorization: 'Bearer not.a.token' } : {};
  const headers = { ...auth, 'content-type': 'application/json', origin: new URL(s.url).origin };
  if (c.type === 'query') {
    const batchInput = encodeURIComponent(`{"0":${text ?? 'null'}}`);
    return {
      single: [`/trpc/${c.path}${text === undefined ? '' : `?input=${encodeURIComponent(text)}`}`, { headers }],
      batch: [`/trpc/${c.path}?batch=1&input=${text === undefined ? encodeURIComponent('{}') : batchInput}`, { headers }],
    };
  }
  return {
    single: [`/trpc/${c.path}`, { method: 'POST', headers, ...(text === undefined ? {} : { body: text }) }],
    batch: [`/trpc/${c.path}?batch=1`, { method: 'POST', headers, body: text === undefined ? '{}' : `{"0":${text}}` }],
  };
}

const HEADERS = ['content-type', 'www-authenticate', 'retry-after', 'access-control-allow-origin', 'access-control-expose-headers'];
const pick = (res: Response) => Object.fromEntries(HEADERS.map((h) => [h, res.headers.get(h)]));

describeMatrix("one /trpc call: the short way and tRPC's adapter agree", (mode) => {
  beforeAll(async () => {
    s = await startTestServer({ jwt: { secret: SECRET }, mcp: { auth: { authType: 'jwt' } }, customRouters: { custom } }, mode);
    userToken = await mintDevToken({ secret: SECRET, sub: 'ada', scopes: ['mcp'] });
  });
  afterAll(() => s.stop());

  it.each(CASES)('$name', async (c) => {
    const { single, batch } = requests(c);
    const one = await s.fetch(...single);
    const many = await s.fetch(...batch);
    const oneBody = (await one.json()) as Record<string, unknown>;
    const manyBody = (await many.json()) as Array<Record<string, unknown>>;
    expect(Array.isArray(manyBody), 'the batch answer is an array').toBe(true);
    expect(oneBody).toEqual(manyBody[0]);
    expect(one.status).toBe(c.status);
    expect(many.status).toBe(c.status);
    if (c.header) expect(one.headers.get(c.header)).toBeTruthy();
    // A 401 names our resource metadata (RFC 9728), as /v1 and /mcp do; a refused token says why.
    if (c.status === 401)
      expect(one.headers.get('www-authenticate')).toMatch(
        /^Bearer .*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/,
      );
    if (c.token === 'bad') expect(one.headers.get('www-authenticate')).toContain('error="invalid_token"');
    if (c.status !== 401) expect(one.headers.get('www-authenticate')).toBeNull();
    expect(pick(one)).toEqual(pick(many));
    expect(JSON.stringify(oneBody)).not.toMatch(/disk on fire|\/var\/lib|at .*\.[jt]s:\d+/);
  });

  it('decodes what the short way answers into the values sent', async () => {
    const res = await s.fetch(`/trpc/custom.when?input=${enc({ at: new Date('2026-01-02T03:04:05Z') })}`);
    const body = (await res.json()) as { result: { data: Parameters<typeof superjson.deserialize>[0] } };
    const data = superjson.deserialize<{ later: Date; tags: Set<string> }>(body.result.data);
    expect(data.later).toEqual(new Date('2026-01-02T03:05:05Z'));
    expect(data.tags).toEqual(new Set(['a', 'b']));
  });
});

describe('one /trpc call short of a required scope', () => {
  it('gets the 403 insufficient_scope challenge naming the scope, alone and in a batch', async () => {
    const server = await startTestServer(
      { jwt: { secret: SECRET }, mcp: { auth: { authType: 'jwt', jwt: { requiredScopes: ['weather:read'] } } } },
      'listening',
    );
    try {
      const token = await mintDevToken({ secret: SECRET, sub: 'ada', scopes: ['mcp'] });
      const headers = { authorization: `Bearer ${token}` };
      const input = encodeURIComponent(JSON.stringify({ json: { message: 'hi' } }));
      const one = await fetch(`${server.url}/trpc/system.test?input=${input}`, { headers });
      const many = await fetch(`${server.url}/trpc/system.test?batch=1&input=${encodeURIComponent(`{"0":${decodeURIComponent(input)}}`)}`, {
        headers,
      });
      for (const res of [one, many]) {
        expect(res.status).toBe(403);
        const challenge = res.headers.get('www-authenticate') ?? '';
        expect(challenge).toContain('error="insufficient_scope"');
        expect(challenge).toContain('scope="weather:read"');
      }
    } finally {
      await server.stop();
    }
  });
});

describe('one /trpc call over a socket', () => {
  it('answers a POST with a chunked body (no Content-Length) like one with a declared length', async () => {
    const server = await startTestServer({ mcp: { auth: { authType: 'none' } }, customRouters: { custom } }, 'listening');
    try {
      const body = JSON.stringify(superjson.serialize({ a: 20, b: 22 }));
      const declared = await fetch(`${server.url}/trpc/custom.add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const stream = new ReadableStream({ start: (ctl) => (ctl.enqueue(new TextEncoder().encode(body)), ctl.close()) });
      const chunked = await fetch(`${server.url}/trpc/custom.add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(await declared.json()).toEqual({ result: { data: { json: { sum: 42 } } } });
      expect(await chunked.json()).toEqual({ result: { data: { json: { sum: 42 } } } });
    } finally {
      await server.stop();
    }
  });
});
