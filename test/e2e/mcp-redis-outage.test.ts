/**
 * With the redis backend down, every /mcp request is answered within 1 s (the answer without
 * resumability, or a clear error), and once Redis is back events are stored again without a
 * restart. A private redis-server that the test kills and restarts; the official MCP SDK client.
 */
import { mintDevToken } from '@ai-backend/auth';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { testService } from '@ai-backend/test-utils/services';
import { PrivateRedis } from './helpers/privateRedis.js';

// Kills and restarts a redis-server of its own: skipped (and named in the run's last line) without the binary.
const redisServer = await testService('redis-server');
import { RawMcp } from './helpers/rawMcp.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'mcp-outage-secret-0123456789abcdef012345';
let redis: PrivateRedis;
let s: TestServer;
let token: string;
const clients: Client[] = [];

async function connect(): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'outage-e2e', version: '1' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await work();
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

async function storedEvents(): Promise<number> {
  const r = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.keys('outage:kv:mcp:ev:*')).filter((k) => !k.endsWith(':seq') && !k.endsWith(':bytes') && !k.includes(':total:'))
      .length;
  } finally {
    r.disconnect();
  }
}

beforeAll(async () => {
  if (!redisServer.ok) return;
  redis = await PrivateRedis.create(redisServer.path, { durable: true });
  await redis.start();
  s = await startTestServer({
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'jwt' } },
    storage: { type: 'redis', redis: { host: '127.0.0.1', port: redis.port, keyPrefix: 'outage:' } },
  });
  token = await mintDevToken({ secret: SECRET, sub: 'outage-user', scopes: ['mcp'] });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await s?.stop();
  await redis?.dispose();
});

describe.skipIf(!redisServer.ok)('/mcp during a Redis outage', () => {
  it('works with Redis up and stores events for resumability', async () => {
    const client = await connect();
    expect(JSON.stringify(await client.callTool({ name: 'echo', arguments: { message: 'before' } }))).toContain('before');
    expect(await storedEvents()).toBeGreaterThan(0);
  });

  it('every request is answered within 1 s while Redis is down', async () => {
    const existing = clients[0]!;
    await redis.kill();
    const call = await timed(() => existing.callTool({ name: 'echo', arguments: { message: 'during' } }));
    expect(call.ms).toBeLessThan(1000);
    expect(JSON.stringify(call.value)).toContain('during');

    const fresh = await timed(async () => {
      const c = await connect();
      return c.callTool({ name: 'echo', arguments: { message: 'fresh' } });
    });
    expect(fresh.ms).toBeLessThan(1000);
    expect(fresh.error ?? JSON.stringify(fresh.value)).toContain('fresh');

    const raw = new RawMcp(s.url, token);
    const init = await timed(() => raw.initialize());
    expect(init.ms).toBeLessThan(1000);
    expect([200, 503]).toContain(init.value!.status);
    // No internal error text reaches the client.
    expect(JSON.stringify(init.value!.message ?? {})).not.toMatch(/ECONNREFUSED|CoreError|storage unavailable/);
    const list = await timed(() => raw.listTools());
    expect(list.ms).toBeLessThan(1000);
  });

  it('recovers without a restart: answers and stored events once Redis is back', async () => {
    await redis.start();
    await waitFor(async () => (await s.fetch('/health/ready')).status === 200, {
      timeoutMs: 6000,
      intervalMs: 100,
      what: '/health/ready after Redis returned',
    });
    const before = await storedEvents();
    const client = await connect();
    expect(JSON.stringify(await client.callTool({ name: 'echo', arguments: { message: 'after' } }))).toContain('after');
    expect(await storedEvents()).toBeGreaterThan(before);
  });
});
