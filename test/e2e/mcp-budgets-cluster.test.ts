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

  it('anonymous sessions from one address count across instances', async () => {
    for (let i = 0; i < 3; i++) expect((await new RawMcp(a.url).initialize()).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await new RawMcp(b.url).initialize()).status).toBe(429);
  });
});
