import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens, type ConfigInput } from '@ai-backend/core/internal';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  reservedFor,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * 200 concurrent ai.generateText calls over HTTP for one user whose balance covers about 50:
 * the balance never goes below zero, exactly the affordable number succeed, and the ledger sums
 * to the final balance. Once on one server (SQLite store), on two servers sharing Redis and on
 * two and three servers sharing PostgreSQL, with the requests alternating between them.
 *
 * The upstream answers with exactly maxTokens output tokens and counts input tokens as the
 * server's worst case, so every call is charged exactly what it reserved: the number of calls
 * the balance allows is then exact, not a range.
 */
const testRedisAt = await testRedis();
const testPg = await testPostgres();
const CALLS = 200;
const AFFORDABLE = 50;
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 100;
const content = (i: number) => `concurrent call ${String(i).padStart(3, '0')}`;
const CHARGE = reservedFor(content(0), SYSTEM, MAX_TOKENS);

let upstream: TestUpstream;
beforeAll(async () => {
  // Input counted as the server's worst case: every call uses exactly what it holds.
  upstream = await createTestUpstream({
    outputTokens: 1000,
    latencyMs: 40,
    countInputTokens: (system, text) => estimateTokens(text, system, 0),
  });
});
afterAll(() => upstream.close());

interface RunResult {
  ok: number;
  refusals: Record<string, number>;
  charged: number;
  minSeen: number;
}

/** Fire all calls at once, alternating between servers, while sampling the balance. */
async function burst(servers: AiServer[], sub: string, token: string): Promise<RunResult> {
  let sampling = true;
  let minSeen = Number.POSITIVE_INFINITY;
  const sampler = (async () => {
    while (sampling) {
      const b = await servers[0]!.runtime.billing.balances(sub);
      minSeen = Math.min(minSeen, b.subscription, b.one_time);
      await new Promise((r) => setTimeout(r, 2)); // the sampler's pace, on purpose (it watches, it waits for nothing)
    }
  })();
  const replies = await Promise.all(
    Array.from({ length: CALLS }, (_, i) =>
      rpcCall(servers[i % servers.length]!.url, token, 'ai.generateText', {
        content: content(i),
        systemPrompt: SYSTEM,
        provider: 'openai',
        options: { maxTokens: MAX_TOKENS },
      }),
    ),
  );
  sampling = false;
  await sampler;
  const refusals: Record<string, number> = {};
  let ok = 0;
  let charged = 0;
  for (const r of replies) {
    if (r.result) {
      ok++;
      charged += r.result.tokenUsage.tokensCharged;
      expect(r.result.tokenUsage.tokensCharged).toBe(CHARGE);
    } else {
      const code = r.error?.data?.code ?? 'none';
      refusals[code] = (refusals[code] ?? 0) + 1;
    }
  }
  return { ok, refusals, charged, minSeen };
}

async function check(servers: AiServer[], sub: string, token: string, initial: number, r: RunResult) {
  expect(r.minSeen).toBeGreaterThanOrEqual(0);
  expect(r.ok).toBe(AFFORDABLE);
  expect(r.refusals).toEqual({ PAYMENT_REQUIRED: CALLS - AFFORDABLE });
  expect(r.charged).toBe(AFFORDABLE * CHARGE);
  const final = initial - r.charged;
  expect(final).toBeGreaterThanOrEqual(0);
  expect(final).toBeLessThan(CHARGE);
  for (const s of servers) {
    const bal = (await rpcCall(s.url, token, 'billing.getTokenBalance')).result;
    expect(bal.virtualTokenBalance).toBe(final);
  }
  const audit = await servers[0]!.runtime.billing.ledger.audit(sub);
  expect(audit).toEqual({ balances: { subscription: final, one_time: 0 }, sums: { subscription: final, one_time: 0 }, consistent: true });
  const usage = (await rpcCall(servers[1 % servers.length]!.url, token, 'billing.getUsageHistory', { limit: 1000 })).result.usage as Array<{
    tokensCharged: number;
  }>;
  expect(usage).toHaveLength(AFFORDABLE);
  expect(initial - usage.reduce((s, u) => s + u.tokensCharged, 0)).toBe(final);
  // Refused calls never reached the upstream.
  expect(upstream.requests.filter((q) => q.content.startsWith('concurrent call'))).toHaveLength(AFFORDABLE);
}

/** Upstream calls the instances made, summed from their registry health counters. */
async function upstreamCalls(servers: AiServer[]): Promise<number> {
  let sum = 0;
  for (const s of servers) {
    const h = await s.runtime.ai.registryHealth();
    if (h.status === 'unhealthy') throw new Error(h.error.message);
    sum += h.providers.openai.calls;
  }
  return sum;
}

describe('200 concurrent calls, balance for about 50', () => {
  it('one server, SQLite store', async () => {
    upstream.reset();
    const dir = await mkdtemp(join(tmpdir(), 'ai-conc-'));
    const gw = await startAiServer(upstream, { storage: { type: 'sqlite', dir } });
    try {
      const sub = 'conc-sqlite-user';
      const token = await tokenFor(sub);
      const initial = AFFORDABLE * CHARGE + Math.floor(CHARGE / 2);
      await creditTokens(gw.url, await tokenFor('conc-admin', { admin: true }), sub, initial, 'conc-file-1');
      const r = await burst([gw], sub, token);
      await check([gw], sub, token, initial, r);
    } finally {
      await gw.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!testRedisAt.ok)('two servers sharing Redis, requests alternating between them', async () => {
    upstream.reset();
    const keyPrefix = `e2e-ai-conc-${randomUUID()}:`;
    const redis: ConfigInput = { storage: { type: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } } };
    const a = await startAiServer(upstream, redis);
    const b = await startAiServer(upstream, redis);
    try {
      const sub = 'conc-redis-user';
      const token = await tokenFor(sub);
      const initial = AFFORDABLE * CHARGE + Math.floor(CHARGE / 2);
      await creditTokens(b.url, await tokenFor('conc-admin', { admin: true }), sub, initial, 'conc-redis-1');
      const r = await burst([a, b], sub, token);
      await check([a, b], sub, token, initial, r);
      // Every upstream call was made by one of the instances (which one wins a race is not fixed).
      expect(await upstreamCalls([a, b])).toBe(AFFORDABLE);
    } finally {
      await a.stop();
      await b.stop();
      await dropTestKeys(testRedisAt, keyPrefix);
    }
  });

  for (const instances of [2, 3]) {
    it.skipIf(!testPg.ok || !testRedisAt.ok)(`${instances} servers on one PostgreSQL plus Redis, requests spread over them`, async () => {
      upstream.reset();
      const pg = testPostgresOptions(testPg, `conc${instances}`);
      const keyPrefix = `e2e-ai-conc-pg-${randomUUID()}:`;
      const config: ConfigInput = {
        storage: { type: 'postgres', postgres: pg, shared: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } },
      };
      const servers: AiServer[] = [];
      try {
        for (let i = 0; i < instances; i++) servers.push(await startAiServer(upstream, config));
        const sub = `conc-pg-user-${instances}`;
        const token = await tokenFor(sub);
        const initial = AFFORDABLE * CHARGE + Math.floor(CHARGE / 2);
        await creditTokens(servers[0]!.url, await tokenFor('conc-admin', { admin: true }), sub, initial, `conc-pg-${instances}`);
        const r = await burst(servers, sub, token);
        await check(servers, sub, token, initial, r);
        expect(await upstreamCalls(servers)).toBe(AFFORDABLE);
        for (const s of servers) expect(s.runtime.shared.kind).toBe('redis');
      } finally {
        for (const s of servers) await s.stop();
        await dropTestSchema(testPg, pg.schema);
        await dropTestKeys(testRedisAt, keyPrefix);
      }
    });
  }

  it.skipIf(!testPg.ok || !testRedisAt.ok)(
    '3 servers on PostgreSQL plus Redis, one killed (kill -9) mid-race: only the number of failures changes',
    async () => {
      upstream.reset();
      const pg = testPostgresOptions(testPg, 'conckill');
      const keyPrefix = `e2e-ai-conc-kill-${randomUUID()}:`;
      // Holds of the killed server expire after a second, so the test can watch them come back.
      const config: ConfigInput = {
        storage: { type: 'postgres', postgres: pg, shared: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } },
        billing: { reservationTtlMs: 1000 },
      };
      const script = fileURLToPath(new URL('../../bench/servers/ai-backend.mjs', import.meta.url));
      const child = spawn(
        process.execPath,
        [script, JSON.stringify({ ...gatewayConfig(upstream, config), monitoring: { logging: { level: 'error' } } })],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const servers: AiServer[] = [];
      try {
        const childUrl = await new Promise<string>((resolve, reject) => {
          child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).url));
          child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
        });
        for (let i = 0; i < 2; i++) servers.push(await startAiServer(upstream, config));
        const urls = [servers[0]!.url, servers[1]!.url, childUrl];
        const sub = 'conc-kill-user';
        const token = await tokenFor(sub);
        const initial = AFFORDABLE * CHARGE + Math.floor(CHARGE / 2);
        await creditTokens(servers[0]!.url, await tokenFor('conc-admin', { admin: true }), sub, initial, 'conc-kill-1');
        const replies = Array.from({ length: CALLS }, (_, i) =>
          rpcCall(urls[i % 3]!, token, 'ai.generateText', {
            content: content(i),
            systemPrompt: SYSTEM,
            provider: 'openai',
            options: { maxTokens: MAX_TOKENS },
          }).then(
            (r) => ({ i, r }),
            () => ({ i, r: undefined }), // the killed server's connections drop
          ),
        );
        // Kill the third server while calls are in flight upstream.
        await upstream.waitForRequests(12, 10_000);
        child.kill('SIGKILL');
        const done = await Promise.all(replies);
        let ok = 0;
        for (const { i, r } of done) {
          if (r?.result) {
            ok++;
            expect(r.result.tokenUsage.tokensCharged).toBe(CHARGE); // each success charged in full
          } else if (i % 3 !== 2) {
            expect(r?.error?.data?.code).toBe('PAYMENT_REQUIRED'); // survivors only ever refuse for money
          }
        }
        const dropped = done.filter(({ i, r }) => i % 3 === 2 && r === undefined).length;
        expect(dropped).toBeGreaterThan(0); // the kill did cut calls
        expect(ok).toBeGreaterThan(0);
        // The dead server's holds come back at expiry; then no hold is left and the ledger sums.
        // Sweep until the one-second reservation TTL has passed and nothing is held any more.
        await waitFor(
          async () => {
            await servers[0]!.runtime.billing.sweepExpiredReservations();
            return (await servers[0]!.runtime.storage.keys('hold:')).length === 0;
          },
          { timeoutMs: 5000, intervalMs: 100, what: "the dead server's holds swept" },
        );
        const audit = await servers[1]!.runtime.billing.ledger.audit(sub);
        expect(audit.consistent).toBe(true);
        // Settled calls: those answered, plus any the dead server settled before its answer got out.
        const usage = (await rpcCall(servers[1]!.url, token, 'billing.getUsageHistory', { limit: 1000 })).result.usage as Array<{
          tokensCharged: number;
        }>;
        expect(usage.length).toBeGreaterThanOrEqual(ok);
        expect(usage.length).toBeLessThanOrEqual(AFFORDABLE);
        for (const u of usage) expect(u.tokensCharged).toBe(CHARGE);
        const final = initial - usage.length * CHARGE;
        expect(audit.balances).toEqual({ subscription: final, one_time: 0 });
        // Nothing reached the upstream that was not held for: at most the affordable number of calls.
        expect(upstream.requests.filter((q) => q.content.startsWith('concurrent call')).length).toBeLessThanOrEqual(AFFORDABLE);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        for (const s of servers) await s.stop();
        await dropTestSchema(testPg, pg.schema);
        await dropTestKeys(testRedisAt, keyPrefix);
      }
    },
  );

  it('with refunds (calls use less than they hold): never below zero, never more than the balance, ledger sums', async () => {
    upstream.reset();
    const gw = await startAiServer(upstream, { storage: { type: 'memory' } });
    try {
      const sub = 'conc-refund-user';
      const token = await tokenFor(sub);
      const text = (i: number) => `${content(i)} [[upstream:output=10]]`;
      const hold = reservedFor(text(0), SYSTEM, MAX_TOKENS);
      const used = estimateTokens(text(0), SYSTEM, 0) + 10;
      const charge = used + Math.ceil(used * 0.1);
      const initial = AFFORDABLE * hold;
      await creditTokens(gw.url, await tokenFor('conc-admin', { admin: true }), sub, initial, 'conc-refund-1');
      const replies = await Promise.all(
        Array.from({ length: CALLS }, (_, i) =>
          rpcCall(gw.url, token, 'ai.generateText', {
            content: text(i),
            systemPrompt: SYSTEM,
            provider: 'anthropic',
            options: { maxTokens: MAX_TOKENS },
          }),
        ),
      );
      const ok = replies.filter((r) => r.result);
      expect(ok.every((r) => r.result.tokenUsage.tokensCharged === charge)).toBe(true);
      expect(replies.filter((r) => r.error).every((r) => r.error!.data?.code === 'PAYMENT_REQUIRED')).toBe(true);
      // At least what the holds allow; never more than the balance pays for.
      expect(ok.length).toBeGreaterThanOrEqual(AFFORDABLE);
      expect(ok.length * charge).toBeLessThanOrEqual(initial);
      const final = initial - ok.length * charge;
      expect((await rpcCall(gw.url, token, 'billing.getTokenBalance')).result.virtualTokenBalance).toBe(final);
      expect(await gw.runtime.billing.ledger.audit(sub)).toMatchObject({ consistent: true, balances: { subscription: final } });
    } finally {
      await gw.stop();
    }
  });
});
