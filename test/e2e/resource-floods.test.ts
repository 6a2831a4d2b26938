/**
 * Resource budgets under floods (bounded counts so the test stays quick): anonymous sessions from
 * many addresses, large results filling the event stores, and client registrations. Afterwards a
 * signed-in client is still served and the process RSS grew by less than the documented budget
 * (docs/security.md, "Measured"). Real server with trustProxy so one test can play many addresses.
 */
import { mintDevToken } from '@ai-backend/auth';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp } from './helpers/rawMcp.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'resource-floods-secret-0123456789abcdef';
/** Documented budget: growth of the memory the whole test process retains across the three floods. */
const RSS_BUDGET_MIB = 64;
const MiB = 1024 * 1024;
let s: TestServer;
// Collect garbage before each reading, so the figure shows what the server retains, not what the
// client parsed and dropped (the flood's 60 MB of results pass through this same process). The
// figure is the V8 heap in use plus memory outside it (buffers): RSS also counts pages the
// allocator and V8 keep after a collection, which differ by Node major (Node 24's larger young
// generation kept ~120 MiB more RSS for the same 62 MiB heap) and say nothing about a leak.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const retained = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
const counts: Record<string, Record<number, number>> = {};

const count = (flood: string, status: number) => {
  const c = (counts[flood] ??= {});
  c[status] = (c[status] ?? 0) + 1;
};

async function inBatches(n: number, size: number, work: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += size) await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, j) => work(i + j)));
}

async function sdkClient(token: string, address: string): Promise<Client> {
  const headers = { authorization: `Bearer ${token}`, 'x-forwarded-for': address };
  const client = new Client({ name: 'flood', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers } }));
  return client;
}

beforeAll(async () => {
  s = await startTestServer({
    trustProxy: true,
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'both' }, budgets: { maxAnonymousSessions: 300, eventStore: { totalBytes: 8 * MiB } } },
    oauth: {
      encryptionKey: 'resource-floods-encryption-key-0123456',
      providerClientId: 'unused',
      provider: {
        authorizationUrl: 'http://127.0.0.1:9/authorize',
        tokenUrl: 'http://127.0.0.1:9/token',
        userinfoUrl: 'http://127.0.0.1:9/userinfo',
      },
      rateLimit: { maxRequests: 1000 },
    },
  });
}, 60_000);
afterAll(() => s?.stop());

describe('floods stay within budgets', () => {
  it('sessions, event stores and registrations; a signed-in client is still served; retained memory within budget', async () => {
    // Warm up every code path once so their modules count in the baseline.
    const warm = await sdkClient(await mintDevToken({ secret: SECRET, sub: 'warm', scopes: ['mcp'] }), '10.9.9.9');
    await warm.callTool({ name: 'echo', arguments: { message: 'warm' } });
    await warm.close();
    const before = retained();

    // 1. 400 anonymous sessions from 400 addresses: the anonymous ceiling (300) holds.
    await inBatches(400, 20, async (i) => {
      const raw = new RawMcp(s.url);
      const res = await fetch(`${s.url}/mcp`, {
        method: 'POST',
        headers: raw.headers({ 'x-forwarded-for': `10.0.${i >> 8}.${i & 255}` }),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
        }),
      });
      await res.arrayBuffer();
      count('sessions', res.status);
    });
    const afterSessions = retained();
    expect(counts.sessions![200]).toBe(300);
    expect(counts.sessions![503]).toBe(100);

    // 2. 30 signed-in sessions each receiving ten ~200 KB results: 60 MB of events unbounded.
    const big = 'r'.repeat(100_000);
    await inBatches(30, 10, async (i) => {
      const client = await sdkClient(await mintDevToken({ secret: SECRET, sub: `flood-${i}`, scopes: ['mcp'] }), `10.1.0.${i}`);
      for (let k = 0; k < 10; k++) await client.callTool({ name: 'echo', arguments: { message: big } });
      count('events', 200);
      await client.close();
    });
    const afterEvents = retained();
    expect(counts.events![200]).toBe(30);

    // 3. 200 registrations from 40 addresses (5 each) plus 30 from one: that one is capped at 20 a day.
    const register = (address: string) =>
      fetch(`${s.url}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ redirect_uris: ['https://app.example.com/cb'], client_name: 'x'.repeat(200) }),
      }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    await inBatches(200, 20, async (i) => count('registrations', await register(`10.2.${i % 40}.1`)));
    for (let i = 0; i < 30; i++) count('oneAddress', await register('10.3.0.1'));
    expect(counts.registrations![201]).toBe(200);
    expect(counts.oneAddress).toEqual({ 201: 20, 429: 10 });

    // A signed-in client is still served (the anonymous table is full).
    const me = await sdkClient(await mintDevToken({ secret: SECRET, sub: 'legit', scopes: ['mcp'] }), '10.1.0.1');
    expect(JSON.stringify(await me.callTool({ name: 'echo', arguments: { message: 'served' } }))).toContain('served');
    await me.close();

    const end = retained();
    const grownMiB = (end - before) / MiB;
    const phase = (a: number, b: number) => ((a - b) / MiB).toFixed(1);
    console.info(
      `resource floods: retained memory (heap + external) grew ${grownMiB.toFixed(1)} MiB (budget ${RSS_BUDGET_MIB} MiB): sessions +${phase(afterSessions, before)}, events +${phase(afterEvents, afterSessions)}, registrations +${phase(end, afterEvents)}; RSS ${(process.memoryUsage().rss / MiB).toFixed(0)} MiB`,
      JSON.stringify(counts),
    );
    expect(grownMiB).toBeLessThan(RSS_BUDGET_MIB);
  }, 180_000);
});
