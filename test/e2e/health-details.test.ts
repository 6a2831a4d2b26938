/**
 * Health for anonymous callers is the status only; the detail text of a failing dependency
 * (which names internal hosts and ports) is for administrators. Every entry point: GET
 * /health/ready, system.health over /trpc and /rpc, and the public MCP tool `health`.
 * Real server on a private redis-server that the test kills.
 */
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpClient, rpcCall } from './helpers/aiGateway.js';
import { testService } from '@ai-backend/test-utils/services';
import { PrivateRedis } from './helpers/privateRedis.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'health-details-secret-0123456789abcdef';
// Kills a redis-server of its own: skipped (and named in the run's last line) without the binary.
const redisServer = await testService('redis-server');
let redis: PrivateRedis;
let s: TestServer;
let adminToken: string;
let userToken: string;

beforeAll(async () => {
  if (!redisServer.ok) return;
  redis = await PrivateRedis.create(redisServer.path, { durable: true });
  await redis.start();
  s = await startTestServer({
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'jwt' } },
    storage: { type: 'redis', redis: { host: '127.0.0.1', port: redis.port, keyPrefix: 'health:' } },
  });
  adminToken = await mintDevToken({ secret: SECRET, sub: 'ops', scopes: ['mcp', 'mcp:admin'] });
  userToken = await mintDevToken({ secret: SECRET, sub: 'someone', scopes: ['mcp'] });
  await redis.kill();
});
afterAll(async () => {
  await s?.stop();
  await redis?.dispose();
});

const leaks = (body: unknown) => JSON.stringify(body).match(/ECONNREFUSED|127\.0\.0\.1|closed|timed out|\d{4,5}/g);

describe.skipIf(!redisServer.ok)('health details are for administrators', () => {
  it('/health/ready: 503 with the status for anyone, details only with an admin token', async () => {
    for (const auth of [undefined, userToken]) {
      const res = await s.fetch('/health/ready', auth ? { headers: { authorization: `Bearer ${auth}` } } : {});
      expect(res.status).toBe(503);
      const body = (await res.json()) as { status: string; checks: Record<string, { ok: boolean; detail?: string }> };
      expect(body.status).toBe('degraded');
      expect(body.checks.storage).toEqual({ ok: false });
    }
    const admin = (await (await s.fetch('/health/ready', { headers: { authorization: `Bearer ${adminToken}` } })).json()) as {
      checks: Record<string, { detail?: string }>;
    };
    expect(admin.checks.storage!.detail).toBeTruthy();
  });

  it('system.health over /rpc and /trpc: no detail text for anonymous callers or plain users', async () => {
    for (const token of [null, userToken]) {
      const r = await rpcCall(s.url, token, 'system.health');
      expect(r.result.checks.storage).toEqual({ ok: false });
      const t = await s.fetch('/trpc/system.health', token ? { headers: { authorization: `Bearer ${token}` } } : {});
      const body = (await t.json()) as { result: { data: { json: { checks: Record<string, unknown> } } } };
      expect(body.result.data.json.checks.storage).toEqual({ ok: false });
    }
    const r = await rpcCall(s.url, adminToken, 'system.health');
    expect(r.result.checks.storage.detail).toBeTruthy();
  });

  it('the MCP tool health: status only for an anonymous client', async () => {
    // Stateless: one server per request, no session state in the (dead) storage.
    const stateless = await startTestServer({
      jwt: { secret: SECRET },
      mcp: { auth: { authType: 'jwt' }, sessionMode: 'stateless' },
      storage: { type: 'redis', redis: { host: '127.0.0.1', port: redis.port, keyPrefix: 'health:' } },
    });
    const client = await mcpClient(stateless.url);
    try {
      const out = (await client.callTool({ name: 'health', arguments: {} })) as { content: Array<{ text: string }> };
      const body = JSON.parse(out.content[0]!.text);
      expect(body.checks.storage).toEqual({ ok: false });
      expect(leaks(body.checks)).toBeNull();
    } finally {
      await client.close();
      await stateless.stop();
    }
  });
});
