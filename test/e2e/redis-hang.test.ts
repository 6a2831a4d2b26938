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
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  sleep,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Redis hangs (a private redis-server stopped with SIGSTOP: its socket stays open, nothing is
 * answered), the outage of a frozen host or a partition that drops packets. ioredis sends every
 * command on one connection, so each waited for its 2 s timeout: with Redis beside PostgreSQL
 * every call still succeeded (billing is in SQL) but took 2 s, and a call with an API key's own
 * limits 8 s (one timeout per counter). With Redis as the store every call answered its 503 after
 * 2 s. After the first timeout, commands now fail at once until Redis answers a probe: calls go
 * on (or answer 503) without waiting for a timeout, health names the dependency, and Redis is used
 * again as soon as it answers.
 *
 * What separates the two is the command timeout, so the calls are bounded by it and not by a
 * guess at the host's speed (a second, which a loaded CI host exceeded): a command sent to the
 * hung Redis waits for a timer that never fires early, so a call that sent one takes at least
 * COMMAND_TIMEOUT_MS on any host, and one that failed at once takes what a healthy call takes
 * (measured first, and shown beside each answer).
 */
/** RedisStorage's default `commandTimeoutMs`, which these servers run with. */
const COMMAND_TIMEOUT_MS = 2000;
const redisServer = await testService('redis-server');
const pgTarget = await testPostgres();

const chatWith = (gw: AiServer, credential: string) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
  });
const generate = { content: 'hi', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } };

describe.skipIf(!redisServer.ok || !pgTarget.ok)('Redis beside PostgreSQL hangs', () => {
  let redis: PrivateServer & HangableServer;
  let upstream: TestUpstream;
  let gw: AiServer;
  let token: string;
  let apiKey: string;
  const pg = testPostgresOptions(pgTarget, 'redis_hang');
  const sub = 'redis-hang-user';

  beforeAll(async () => {
    redis = await startPrivateRedis();
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, {
      mcp: { rateLimiting: { enabled: true } },
      storage: { type: 'postgres', shared: 'redis', postgres: pg, redis: { host: redis.host, port: redis.port, keyPrefix: 'hang:' } },
    });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('redis-hang-admin', { admin: true }), sub, 100_000, 'redis-hang-1');
    const made = await rpcCall<{ key: string }>(gw.url, token, 'keys.create', {
      name: 'limited',
      limits: { requestsPerMinute: 100, tokensPerMinute: 100_000, concurrent: 5 },
    });
    apiKey = made.result!.key;
  }, 60_000);
  afterAll(async () => {
    await redis?.thaw();
    await gw?.stop();
    await upstream?.close();
    await redis?.close();
    await dropTestSchema(pgTarget, pg.schema);
  });

  it('calls go on without waiting for a timeout after the first one, health names `shared`, and Redis is used again when it answers', async () => {
    const calls = [
      ['api key with limits on /v1', async () => (await chatWith(gw, apiKey)).status],
      ['jwt on /rpc', async () => ((await rpcCall(gw.url, token, 'ai.generateText', generate)).result ? 200 : 500)],
    ] as const;
    const healthy = new Map<string, number>();
    for (const [label, run] of calls) {
      const started = performance.now();
      expect(await run()).toBe(200);
      healthy.set(label, Math.round(performance.now() - started));
    }
    await redis.freeze();
    const answers: string[] = [];
    try {
      // The first command meets the hang and waits for its timeout: that tells the store, and the
      // call's other commands (three more limits) do not wait for theirs.
      const first = performance.now();
      expect((await chatWith(gw, apiKey)).status).toBe(200);
      expect(performance.now() - first).toBeLessThan(2 * COMMAND_TIMEOUT_MS);
      for (let i = 0; i < 3; i++) {
        // deliberate: past the rate limiter's own 1 s pause after a failed count
        await sleep(1100);
        for (const [label, run] of calls) {
          const started = performance.now();
          const status = await run();
          const ms = Math.round(performance.now() - started);
          answers.push(`${label}: ${status} in ${ms} ms (${healthy.get(label)} ms with Redis healthy)`);
          expect(status, answers.at(-1)).toBe(200);
          expect(ms, answers.at(-1)).toBeLessThan(COMMAND_TIMEOUT_MS);
        }
      }
      const started = performance.now();
      const ready = await fetch(`${gw.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { checks: Record<string, { ok: boolean }> }).checks.shared).toEqual({ ok: false });
      expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS);
    } finally {
      await redis.thaw();
    }
    await waitFor(async () => (await fetch(`${gw.url}/health/ready`)).status === 200, {
      timeoutMs: 5000,
      intervalMs: 50,
      what: '/health/ready after Redis answered again',
    });
    expect((await chatWith(gw, apiKey)).status).toBe(200);
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
  }, 60_000);
});

describe.skipIf(!redisServer.ok)('Redis as the store hangs', () => {
  let redis: PrivateServer & HangableServer;
  let upstream: TestUpstream;
  let gw: AiServer;
  let token: string;
  const sub = 'redis-store-hang-user';

  beforeAll(async () => {
    redis = await startPrivateRedis();
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, {
      storage: { type: 'redis', redis: { host: redis.host, port: redis.port, keyPrefix: 'storehang:' } },
    });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('redis-store-hang-admin', { admin: true }), sub, 100_000, 'redis-store-hang-1');
  }, 60_000);
  afterAll(async () => {
    await redis?.thaw();
    await gw?.stop();
    await upstream?.close();
    await redis?.close();
  });

  it('after the first timeout every call answers 503 without waiting for one, nothing goes upstream, and service resumes when Redis answers', async () => {
    const healthyStarted = performance.now();
    expect((await rpcCall(gw.url, token, 'ai.generateText', generate)).result).toBeTruthy();
    const healthy = Math.round(performance.now() - healthyStarted);
    const served = upstream.requests.length;
    await redis.freeze();
    try {
      expect((await rpcCall(gw.url, token, 'billing.getTokenBalance')).error?.code).toBe(-32053);
      for (let i = 0; i < 3; i++) {
        for (const call of [
          () => rpcCall(gw.url, token, 'ai.generateText', generate),
          () => rpcCall(gw.url, token, 'billing.getTokenBalance'),
        ]) {
          const started = performance.now();
          const r = await call();
          const ms = performance.now() - started;
          expect(r.error?.code).toBe(-32053);
          expect(ms, `answered in ${Math.round(ms)} ms (${healthy} ms with Redis healthy)`).toBeLessThan(COMMAND_TIMEOUT_MS);
        }
      }
      expect(upstream.requests.length, 'no call went upstream while the store hung').toBe(served);
    } finally {
      await redis.thaw();
    }
    await waitFor(async () => !(await rpcCall(gw.url, token, 'billing.getTokenBalance')).error, {
      timeoutMs: 5000,
      intervalMs: 50,
      what: 'the store answering after Redis did',
    });
    expect((await rpcCall(gw.url, token, 'ai.generateText', generate)).result).toBeTruthy();
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
  }, 60_000);
});
