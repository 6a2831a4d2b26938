import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropTestSchema,
  startPrivateRedis,
  testPostgres,
  testPostgresOptions,
  testService,
  type HangableServer,
  type PrivateServer,
} from '@ai-backend/test-utils/services';
import { createTestUpstream, startAiServer, tokenFor, waitFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

/**
 * Two instances on PostgreSQL with Redis beside it: an MCP 2025 session opened on one is found by
 * the other through its record in Redis. While Redis is down the other instance cannot read the
 * record; it answered 404 "Session not found", which tells an MCP client its session is gone (the
 * client starts a new one and loses what it had), though the session was still there once Redis
 * came back. It must answer 503 within a second, and the same session must work once Redis does.
 */
const redisServer = await testService('redis-server');
const pgTarget = await testPostgres();

describe.skipIf(!redisServer.ok || !pgTarget.ok)('an MCP session looked up on another instance while Redis is down', () => {
  let redis: PrivateServer & HangableServer;
  let upstream: TestUpstream;
  let a: AiServer;
  let b: AiServer;
  let token: string;
  const pg = testPostgresOptions(pgTarget, 'mcp_session_redis');

  beforeAll(async () => {
    redis = await startPrivateRedis();
    upstream = await createTestUpstream();
    const storage = {
      type: 'postgres',
      shared: 'redis',
      postgres: pg,
      redis: { host: redis.host, port: redis.port, keyPrefix: 'msr:' },
    } as const;
    a = await startAiServer(upstream, { storage });
    b = await startAiServer(upstream, { storage });
    token = await tokenFor('mcp-session-redis-user');
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await upstream?.close();
    await redis?.close();
    await dropTestSchema(pgTarget, pg.schema);
  });

  const post = (gw: AiServer, body: unknown, sessionId?: string) =>
    fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
      },
      body: JSON.stringify(body),
    });
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

  it('answers 503, not 404, on the other instance while Redis is down (stopped or hung), and serves the session once it is back', async () => {
    for (const outage of ['stopped', 'hung'] as const) {
      const init = await post(a, {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'outage', version: '1' } },
      });
      expect(init.status).toBe(200);
      await init.text();
      const session = init.headers.get('mcp-session-id')!;
      await (await post(a, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();

      if (outage === 'stopped') await redis.stop();
      else await redis.freeze();
      try {
        // A hung Redis is known only after one command's timeout (2 s); then at once.
        if (outage === 'hung') await (await post(b, list, session)).text();
        const started = performance.now();
        const res = await post(b, list, session);
        const ms = performance.now() - started;
        expect(res.status, `${outage}: ${await res.clone().text()}`).toBe(503);
        expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32053);
        expect(ms, `${outage}: answered in ${Math.round(ms)} ms`).toBeLessThan(1000);
      } finally {
        if (outage === 'stopped') await redis.start();
        else await redis.thaw();
      }
      const back = await waitFor(
        async () => {
          const res = await post(b, list, session);
          const text = await res.text();
          return res.status === 200 ? text : undefined;
        },
        {
          timeoutMs: 8000,
          intervalMs: 100,
          what: `the session on the other instance after Redis ${outage === 'stopped' ? 'restarted' : 'answered'}`,
        },
      );
      expect(back).toContain('"tools"');
    }
  }, 60_000);
});
