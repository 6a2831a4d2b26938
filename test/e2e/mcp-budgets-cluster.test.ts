/**
 * MCP session budgets are the cluster's (issue 20): two servers sharing a store count each
 * other's sessions, so the per-identity, per-address and anonymous limits hold across instances;
 * a stopped instance's sessions stop counting.
 */
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { RawMcp } from './helpers/rawMcp.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'mcp-budgets-cluster-secret-0123456789abcdef';
const redis = await testRedis();

describe.skipIf(!redis.ok)('MCP session budgets across two servers sharing Redis', () => {
  const opts = testRedisOptions(redis, 'mcpbudget');
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    const config = {
      jwt: { secret: SECRET },
      storage: { type: 'redis' as const, redis: { host: opts.host, port: opts.port, keyPrefix: opts.keyPrefix } },
      mcp: { auth: { authType: 'jwt' as const }, budgets: { sessionsPerAddress: 3, sessionsPerIdentity: 3, maxAnonymousSessions: 100 } },
    };
    a = await startTestServer(config);
    b = await startTestServer(config);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await dropTestKeys(redis, opts.keyPrefix);
  });

  it('sessions of one identity on two instances count against one limit', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'cluster-user', scopes: ['mcp'] });
    const onA: RawMcp[] = [];
    for (let i = 0; i < 3; i++) {
      const r = new RawMcp(a.url, token);
      expect((await r.initialize()).status).toBe(200);
      onA.push(r);
    }
    // Each instance publishes its counts every second: after that B refuses a fourth session.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(b.url, token).initialize()).status).toBe(429);
    // One ends on A: B admits exactly one more.
    await fetch(`${a.url}/mcp`, { method: 'DELETE', headers: onA[0]!.headers() });
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(b.url, token).initialize()).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(a.url, token).initialize()).status).toBe(429);
    expect((await new RawMcp(b.url, token).initialize()).status).toBe(429);
  });

  it('a session served by both instances counts once, and its DELETE on one ends it on both', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'roaming-user', scopes: ['mcp'] });
    const onA: RawMcp[] = [];
    for (let i = 0; i < 3; i++) {
      const r = new RawMcp(a.url, token);
      expect((await r.initialize()).status).toBe(200);
      onA.push(r);
    }
    // A load balancer without sticky sessions sends each session's next request to B, which
    // takes it over from its record; the client's next one goes back to A.
    const onB = onA.map((r) => Object.assign(new RawMcp(b.url, token), { sessionId: r.sessionId }));
    for (const r of onB) expect((await r.listTools()).status).toBe(200);
    for (const r of onA) expect((await r.listTools()).status).toBe(200);
    // Still three sessions, not six: one ended on B frees one place in the cluster.
    const del = await fetch(`${b.url}/mcp`, { method: 'DELETE', headers: onB[0]!.headers() });
    expect(del.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    // A let its copy go too (it used to keep it, counted, until it idled out 30 minutes later).
    expect((await onA[0]!.listTools()).status).toBe(404);
    const third = new RawMcp(a.url, token);
    expect((await third.initialize()).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(b.url, token).initialize()).status).toBe(429);
    for (const r of [onA[1]!, onA[2]!, third]) await fetch(`${a.url}/mcp`, { method: 'DELETE', headers: r.headers() });
  });

  it('anonymous sessions from one address count across instances', async () => {
    for (let i = 0; i < 3; i++) expect((await new RawMcp(a.url).initialize()).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(b.url).initialize()).status).toBe(429);
  });
});
