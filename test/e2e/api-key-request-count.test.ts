import { mintDevToken } from '@ai-backend/auth';
import { windowClock } from '@ai-backend/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from './helpers/aiGateway.js';
import { RawMcp } from './helpers/rawMcp.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

/**
 * Every request authenticated by an API key counts against the key's requests per minute, whatever
 * it reaches: a procedure call, and also what calls no procedure (GET /metrics, GET /health/ready,
 * MCP initialize, tools/list and notifications, a /rpc notification, an unknown /trpc path). Before,
 * only procedure calls counted, so a key limited to N requests a minute could poll /metrics, the
 * readiness details or MCP lists without end. A request that makes several calls (a batch) counts
 * each of them; a request making one call counts once.
 */
const SECRET = 'key-request-count-secret-0123456789abcdef';
const OWNER = 'rc-owner';
const LIMIT = 3;
const clock = windowClock(60_000);
let s: TestServer;
let owner: string;

beforeAll(async () => {
  s = await startTestServer(
    {
      jwt: { secret: SECRET },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      admin: { users: [OWNER] },
    },
    'listening',
    { clock: clock.now },
  );
  owner = await mintDevToken({ secret: SECRET, sub: OWNER, scopes: ['mcp', 'mcp:admin'] });
});
afterAll(() => s?.stop());

/** A fresh administrator key limited to LIMIT requests a minute, in a fresh minute. */
async function limitedKey(): Promise<string> {
  const made = await rpcCall(s.url, owner, 'keys.create', {
    name: 'counted',
    scopes: ['mcp:admin'],
    limits: { requestsPerMinute: LIMIT },
  });
  if (!made.result) throw new Error(made.text);
  clock.startWindow();
  return made.result.key as string;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** The key's next procedure call is refused as over its requests per minute. */
async function expectUsedUp(key: string): Promise<void> {
  const r = await rpcCall(s.url, key, 'billing.getTokenBalance');
  expect(r.error?.data).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_requests_limit' } });
}

describe('an API key counts every request it authenticates', () => {
  it('GET /metrics counts, and is answered 429 past the limit', async () => {
    const key = await limitedKey();
    for (let i = 0; i < LIMIT; i++) expect((await s.fetch('/metrics', { headers: bearer(key) })).status).toBe(200);
    const over = await s.fetch('/metrics', { headers: bearer(key) });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await over.json()).toMatchObject({ error: expect.stringContaining('requests per minute') });
    await expectUsedUp(key);
  });

  it('GET /health/ready counts, and is answered 429 past the limit', async () => {
    const key = await limitedKey();
    for (let i = 0; i < LIMIT; i++) expect((await s.fetch('/health/ready', { headers: bearer(key) })).status).toBe(200);
    const over = await s.fetch('/health/ready', { headers: bearer(key) });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    await expectUsedUp(key);
    // Without a credential the probe is untouched.
    expect((await s.fetch('/health/ready')).status).toBe(200);
  });

  it('MCP requests that call no procedure count: initialize, its notification, tools/list', async () => {
    const key = await limitedKey();
    const mcp = new RawMcp(s.url, key);
    expect((await mcp.initialize()).status).toBe(200); // initialize + notifications/initialized: two requests
    expect((await mcp.listTools()).status).toBe(200);
    const over = await mcp.listTools();
    expect(over.status).toBe(429);
    expect(over.message?.error).toMatchObject({ code: -32029, data: { reason: 'key_requests_limit' } });
    expect(over.headers.get('retry-after')).toBeTruthy();
    await expectUsedUp(key);
  });

  it('a /rpc notification and an unknown /trpc path count', async () => {
    const key = await limitedKey();
    const note = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(key) },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'billing.getTokenBalance' }),
    });
    expect(note.status).toBe(204);
    expect((await s.fetch('/trpc/no.such.procedure', { headers: bearer(key) })).status).toBe(404);
    expect((await rpcCall(s.url, key, 'billing.getTokenBalance')).result).toBeDefined();
    await expectUsedUp(key);
  });

  it('a request with one call counts once, a batch counts each call', async () => {
    const one = await limitedKey();
    for (let i = 0; i < LIMIT; i++) expect((await rpcCall(s.url, one, 'billing.getTokenBalance')).result).toBeDefined();
    await expectUsedUp(one);
    const batched = await limitedKey();
    const res = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(batched) },
      body: JSON.stringify(Array.from({ length: LIMIT + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'billing.getTokenBalance' }))),
    });
    const answers = (await res.json()) as Array<{ result?: unknown; error?: { data?: { details?: { reason?: string } } } }>;
    expect(answers.filter((a) => a.result)).toHaveLength(LIMIT);
    expect(answers.filter((a) => a.error?.data?.details?.reason === 'key_requests_limit')).toHaveLength(1);
    await expectUsedUp(batched);
  });
});
