import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { windowClock } from '@ai-backend/test-utils';
import { dropTestSchema, rawTestClient, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import { mintDevToken } from '@ai-backend/auth';
import type { ConfigInput } from '@ai-backend/core';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { RawMcp, type McpReply } from './helpers/rawMcp.js';

const SECRET = 'rate-limit-secret-0123456789-abcdefghij';
// Fixed windows are aligned to the clock: an hour makes a window change during a test very unlikely.
const WINDOW_MS = 3_600_000;

const started: TestServer[] = [];
async function server(config: ConfigInput, clock?: () => number): Promise<TestServer> {
  const s = await startTestServer({ jwt: { secret: SECRET }, ...config }, 'listening', clock ? { clock } : {});
  started.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

const limits = (maxRequests: number, maxToolCalls: number) => ({ enabled: true, windowMs: WINDOW_MS, maxRequests, maxToolCalls });

/** The 429 every limited answer must be: Retry-After within the window, IETF headers, JSON-RPC error. */
function expect429(reply: McpReply | Response, policy: 'requests' | 'tool-calls', windowSec = WINDOW_MS / 1000) {
  expect(reply.status).toBe(429);
  const retry = Number(reply.headers.get('retry-after'));
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(windowSec);
  expect(reply.headers.get('ratelimit')).toContain(`"${policy}";r=0;t=${retry}`);
  expect(reply.headers.get('ratelimit-policy')).toMatch(
    new RegExp(`^"requests";q=\\d+;w=${windowSec}, "tool-calls";q=\\d+;w=${windowSec}$`),
  );
}

describe('mcp.rateLimiting on one server', () => {
  it('answers the (maxRequests+1)th /mcp request in a window with 429 and Retry-After', async () => {
    const s = await server({ mcp: { auth: { authType: 'none' }, rateLimiting: limits(5, 100) } });
    const mcp = new RawMcp(s.url);
    const init = await mcp.initialize(); // requests 1 and 2 (initialize + initialized notification)
    expect(init.headers.get('ratelimit')).toMatch(/^"requests";r=4;t=\d+$/);
    const remaining: string[] = [];
    for (let i = 3; i <= 5; i++) {
      const reply = await mcp.listTools();
      expect(reply.status).toBe(200);
      remaining.push(/r=(\d+)/.exec(reply.headers.get('ratelimit')!)![1]!);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await mcp.listTools();
    expect429(over, 'requests');
    expect(over.message?.error?.code).toBe(-32029);
    expect(over.message?.error?.data).toMatchObject({ kind: 'requests', limit: 5 });
    // Another caller (an authenticated subject) has its own budget.
    const alice = new RawMcp(s.url, await mintDevToken({ secret: SECRET, sub: 'alice' }));
    expect((await alice.initialize()).status).toBe(200);
    expect((await alice.listTools()).status).toBe(200);
  });

  it('counts bad-token floods against the client address', async () => {
    const s = await server({ mcp: { auth: { authType: 'jwt' }, rateLimiting: limits(3, 100) } });
    const mallory = new RawMcp(s.url, 'not.a.token');
    for (let i = 0; i < 3; i++) expect((await mallory.initialize()).status).toBe(401);
    expect429(await mallory.initialize(), 'requests');
  });

  it('limits tools/call per caller, and the same budget covers tool calls over /rpc and /trpc', async () => {
    const s = await server({ mcp: { auth: { authType: 'jwt', publicTools: ['echo'] }, rateLimiting: limits(100, 3) } });
    const token = await mintDevToken({ secret: SECRET, sub: 'bob' });
    const auth = { authorization: `Bearer ${token}` };
    const mcp = new RawMcp(s.url, token);
    await mcp.initialize();
    expect((await mcp.callTool('echo', { message: '1' })).status).toBe(200);
    expect((await mcp.callTool('echo', { message: '2' })).status).toBe(200);
    // tools/list is not a tool call.
    expect((await mcp.listTools()).status).toBe(200);
    const rpc = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.echo', params: { message: '3' } }),
    });
    expect(((await rpc.json()) as any).result).toEqual({ message: '3' });

    const over = await mcp.callTool('echo', { message: '4' });
    expect429(over, 'tool-calls');
    expect(over.message?.error?.data).toMatchObject({ kind: 'toolCalls', limit: 3 });

    const rpcOver = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'mcp.echo', params: { message: '5' } }),
    });
    expect(Number(rpcOver.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const rpcBody = (await rpcOver.json()) as any;
    expect(rpcBody.error.code).toBe(-32029);
    expect(rpcBody.error.data.appCode).toBe('RATE_LIMITED');

    const trpcOver = await s.fetch(`/trpc/mcp.echo?input=${encodeURIComponent(JSON.stringify({ json: { message: '6' } }))}`, {
      headers: auth,
    });
    expect429(trpcOver, 'tool-calls');
    expect(((await trpcOver.json()) as any).error.json.data.code).toBe('TOO_MANY_REQUESTS');

    // Procedures that are not tools (admin.status) are not counted on /rpc; other callers are unaffected.
    const bobAdmin = { authorization: `Bearer ${await mintDevToken({ secret: SECRET, sub: 'bob', scopes: ['mcp:admin'] })}` };
    const status = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bobAdmin },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'admin.status', params: {} }),
    });
    expect(((await status.json()) as any).result).toBeDefined();
    const carol = new RawMcp(s.url, await mintDevToken({ secret: SECRET, sub: 'carol' }));
    await carol.initialize();
    expect((await carol.callTool('echo', { message: 'c' })).status).toBe(200);
  });

  it('is on by default: 300 /mcp requests and 120 tool calls per caller and minute, then 429', async () => {
    // Fixed one-minute windows aligned to the clock: the server reads a clock that starts at a
    // window's beginning, so all calls land in one without waiting for the next minute.
    const s = await server({ mcp: { auth: { authType: 'none' } } }, windowClock(60_000).now);
    const mcp = new RawMcp(s.url);
    await mcp.initialize();
    const first = await mcp.callTool('echo', { message: 'first' });
    expect(first.headers.get('ratelimit-policy')).toBe('"requests";q=300;w=60, "tool-calls";q=120;w=60');
    const secondsLeft = Number(/"tool-calls";r=\d+;t=(\d+)/.exec(first.headers.get('ratelimit') ?? '')?.[1]);
    expect(secondsLeft).toBeGreaterThanOrEqual(45); // the injected clock, not the wall clock, decides the window
    for (let used = 1; used < 120; used++) expect((await mcp.callTool('echo', { message: String(used) })).status).toBe(200);
    expect429(await mcp.callTool('echo', { message: 'over' }), 'tool-calls', 60);
  });

  it('leaves everything unlimited and without RateLimit headers when switched off', async () => {
    const s = await server({ mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } } });
    const mcp = new RawMcp(s.url);
    await mcp.initialize();
    for (let i = 0; i < 150; i++) {
      const reply = await mcp.callTool('echo', { message: String(i) });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('ratelimit')).toBeNull();
    }
  });
});

const testRedisAt = await testRedis();

describe.skipIf(!testRedisAt.ok)('mcp.rateLimiting across two servers sharing Redis', () => {
  let keyPrefix: string;
  let redis: Redis;
  beforeAll(async () => {
    redis = rawTestClient(testRedisAt);
    await redis.connect();
  });
  afterEach(async () => {
    const keys = await redis.keys(`${keyPrefix}*`);
    if (keys.length) await redis.unlink(...keys);
  });
  afterAll(() => redis.disconnect());

  const pair = async (rateLimiting: ReturnType<typeof limits>, auth: Record<string, unknown> = { authType: 'none' }) => {
    keyPrefix = `ai-backend-test:ratelimit-e2e:${randomUUID()}:`;
    const config: ConfigInput = {
      storage: { type: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } },
      // Stateless: any instance can answer any request, as behind a load balancer.
      mcp: { auth, rateLimiting, sessionMode: 'stateless' },
    };
    return [await server(config), await server(config)] as const;
  };

  it('answers the (maxRequests+1)th request with 429 when requests alternate between the servers', async () => {
    const [a, b] = await pair(limits(6, 100));
    const clients = [new RawMcp(a.url), new RawMcp(b.url)];
    for (let i = 0; i < 6; i++) {
      const reply = await clients[i % 2]!.listTools();
      expect(reply.status, `request ${i + 1}`).toBe(200);
    }
    expect429(await clients[0]!.listTools(), 'requests');
    expect429(await clients[1]!.listTools(), 'requests');
  });

  it('enforces one tool-call budget per subject across the servers, also under concurrency', async () => {
    const [a, b] = await pair(limits(1000, 10), { authType: 'jwt', publicTools: [] });
    await expectOneToolCallBudget(a, b, 'dave');
    // The counters live in the shared Redis, under the configured prefix.
    expect((await redis.keys(`${keyPrefix}*rl:toolCalls:u:dave:*`)).length).toBe(1);
  });
});

/** 16 concurrent tool calls of one subject, alternating between two servers with a budget of 10: exactly 10 served. */
async function expectOneToolCallBudget(a: { url: string }, b: { url: string }, sub: string): Promise<void> {
  const token = await mintDevToken({ secret: SECRET, sub });
  const clients = [new RawMcp(a.url, token), new RawMcp(b.url, token)];
  const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => clients[i % 2]!.callTool('echo', { message: String(i) })));
  expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
  const refused = replies.filter((r) => r.status === 429);
  expect(refused).toHaveLength(6);
  for (const r of refused) expect429(r, 'tool-calls');
}

const testPostgresAt = await testPostgres();

// Without Redis the limits are still the cluster's: the counters live in PostgreSQL (docs/storage.md, "Cluster-wide by default").
describe.skipIf(!testPostgresAt.ok)('mcp.rateLimiting across two servers on one PostgreSQL (no Redis)', () => {
  let schema: string | undefined;
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
    if (schema) await dropTestSchema(testPostgresAt, schema);
    schema = undefined;
  });

  it('enforces one tool-call budget per subject across the servers, under concurrency', async () => {
    const pg = testPostgresOptions(testPostgresAt, 'ratelimit-e2e');
    schema = pg.schema;
    const config: ConfigInput = {
      storage: { type: 'postgres', postgres: pg },
      mcp: { auth: { authType: 'jwt', publicTools: [] }, rateLimiting: limits(1000, 10), sessionMode: 'stateless' },
    };
    const a = await server(config);
    const b = await server(config);
    await expectOneToolCallBudget(a, b, 'erin');
  });
});
