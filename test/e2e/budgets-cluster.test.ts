import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens, verifyAlertSignature, type ConfigInput } from '@ai-backend/core/internal';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  sleep,
  startAiServer,
  tokenFor,
  trpcClient,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { webhookReceiver } from './helpers/webhookReceiver.js';

/**
 * Spend governance over two real servers on one PostgreSQL (plus Redis for the shared state):
 * a budget set through one instance's tRPC client holds for 60 concurrent calls spread over
 * both, both instances report the same budget, analytics and statistics, and a local webhook
 * receiver gets each threshold alert and the exceeded alert exactly once, correctly signed.
 */
const pgAt = await testPostgres();
const redisAt = await testRedis();
const SECRET = 'budget-alert-secret-0123456789abcdefghij';
const CALLS = 60;
const AFFORDABLE = 20;
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 50;
const content = (i: number) => `budget call ${String(i).padStart(3, '0')}`;
/** Tokens each call holds against the budget and, with this upstream, uses: the fee is not counted. */
const WORST = estimateTokens(content(0), SYSTEM, MAX_TOKENS);
const LIMIT = AFFORDABLE * WORST + Math.floor(WORST / 2);

describe.skipIf(!pgAt.ok || !redisAt.ok)('budgets on two instances sharing PostgreSQL and Redis', () => {
  let upstream: TestUpstream;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;
  let a: AiServer;
  let b: AiServer;
  const pg = testPostgresOptions(pgAt, 'budgets');
  const keyPrefix = `e2e-budgets-${randomUUID()}:`;
  const sub = `budget-user-${randomUUID().slice(0, 8)}`;
  let user: string;
  let admin: string;

  beforeAll(async () => {
    // Input counted as the server's worst case and output = maxTokens: each call uses exactly what it holds.
    upstream = await createTestUpstream({ outputTokens: 1000, countInputTokens: (system, text) => estimateTokens(text, system, 0) });
    hook = await webhookReceiver();
    const config: ConfigInput = {
      storage: { type: 'postgres', postgres: pg, shared: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
      statistics: { flushIntervalMs: 100 },
      alerts: {
        webhooks: [{ url: hook.url, secret: SECRET, events: ['budgetThreshold', 'budgetExceeded'] }],
        pollIntervalMs: 50,
        retryBaseMs: 100,
      },
    };
    a = await startAiServer(upstream, config);
    b = await startAiServer(upstream, config);
    user = await tokenFor(sub);
    admin = await tokenFor('budget-admin', { admin: true });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await hook?.close();
    await upstream?.close();
    await dropTestSchema(pgAt, pg.schema);
    await dropTestKeys(redisAt, keyPrefix);
  });

  it(`a token budget set on one instance holds for ${CALLS} concurrent calls over both: exactly ${AFFORDABLE} run`, async () => {
    const set = await trpcClient(a.url, admin).admin.setBudget.mutate({
      userId: sub,
      period: 'daily',
      tokens: LIMIT,
      thresholds: [0.5, 0.8],
    });
    expect(set.periods[0]).toMatchObject({ source: 'user', limits: { tokens: LIMIT }, spent: { tokens: 0 } });
    await creditTokens(b.url, admin, sub, 10_000_000, `budget-seed-${sub}`);

    const replies = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        rpcCall(i % 2 ? b.url : a.url, user, 'ai.generateText', {
          content: content(i),
          systemPrompt: SYSTEM,
          provider: 'openai',
          options: { maxTokens: MAX_TOKENS },
        }),
      ),
    );
    const ok = replies.filter((r) => r.result);
    const refused = replies.filter((r) => r.error);
    expect(ok).toHaveLength(AFFORDABLE);
    for (const r of ok) expect(r.result.tokenUsage.tokensUsed).toBe(WORST);
    expect(refused).toHaveLength(CALLS - AFFORDABLE);
    for (const r of refused) {
      expect(r.error!.data).toMatchObject({
        code: 'PAYMENT_REQUIRED',
        details: { reason: 'budget_exceeded', period: 'daily', metric: 'tokens', limit: LIMIT, requested: WORST },
      });
      expect(Date.parse(String(r.error!.data!.details!.resetsAt))).toBeGreaterThan(Date.now());
    }
    // Refused calls never reached the upstream.
    expect(upstream.requests.filter((q) => q.content.startsWith('budget call'))).toHaveLength(AFFORDABLE);
  });

  it('both instances report the same budget: /rpc on one, the tRPC client on the other', async () => {
    const viaRpc = (await rpcCall(a.url, user, 'billing.getBudget')).result;
    const viaTrpc = await trpcClient(b.url, user).billing.getBudget.query();
    expect(viaTrpc).toEqual(viaRpc);
    expect(viaRpc.periods[0]).toMatchObject({
      period: 'daily',
      spent: { tokens: AFFORDABLE * WORST },
      reserved: { tokens: 0 },
      remaining: { tokens: LIMIT - AFFORDABLE * WORST },
    });
    expect((await rpcCall(b.url, admin, 'admin.getBudget', { userId: sub })).result).toEqual(viaRpc);
    // BYOK calls are the user's own spend: the exhausted budget does not stop them.
    const own = await rpcCall(b.url, user, 'ai.generateText', {
      content: 'with my own key',
      systemPrompt: SYSTEM,
      provider: 'openai',
      apiKey: 'sk-user-own-key-0001',
      options: { maxTokens: 10 },
    });
    if (!own.result) throw new Error(own.text);
    expect(own.result.usageInfo).toMatchObject({ tokensUsed: expect.any(Number) });
  });

  it('the receiver gets each threshold alert and the exceeded alert exactly once, signed', async () => {
    await waitFor(() => hook.got.length >= 3, { what: 'three alerts received' });
    await sleep(500); // a deliberate pause: time for any duplicate to arrive (asserting none does)
    expect(hook.got.every((g) => verifyAlertSignature(SECRET, g.body, g.signature))).toBe(true);
    const thresholds = hook.got.filter((g) => g.event === 'budgetThreshold');
    expect(thresholds.map((g) => g.json.data.threshold).sort()).toEqual([0.5, 0.8]);
    const day = new Date().toISOString().slice(0, 10);
    expect(thresholds.map((g) => g.key).sort()).toEqual([0.5, 0.8].map((t) => `budgetThreshold:${sub}:daily:${day}:tokens:${t}`));
    for (const g of thresholds)
      expect(g.json).toMatchObject({
        id: g.key,
        event: 'budgetThreshold',
        data: { userId: sub, period: 'daily', metric: 'tokens', limit: LIMIT },
      });
    const exceeded = hook.got.filter((g) => g.event === 'budgetExceeded');
    expect(exceeded).toHaveLength(1);
    expect(exceeded[0]!.json.data).toMatchObject({ userId: sub, period: 'daily', metric: 'tokens', limit: LIMIT });
    expect(hook.got).toHaveLength(3);
  });

  it('admin.usageAnalytics and admin.statistics are the same on both instances', async () => {
    const fromA = (await rpcCall(a.url, admin, 'admin.usageAnalytics', { days: 1 })).result;
    const fromB = await trpcClient(b.url, admin).admin.usageAnalytics.query({ days: 1 });
    expect(fromB).toEqual(fromA);
    expect(fromA.totals).toMatchObject({ platformRequests: AFFORDABLE, byokRequests: 1 });
    const top = fromA.topUsers.find((u: { userId: string }) => u.userId === sub);
    expect(top).toMatchObject({ platformRequests: AFFORDABLE, requests: AFFORDABLE + 1 });
    // The money figure equals the sum over the user's own history (each settle recorded its cost).
    const history = (await rpcCall(a.url, user, 'billing.getUsageHistory', { limit: 100 })).result.usage as Array<{
      mode: string;
      estimatedCostUsd: number;
    }>;
    const platformCost = history.filter((u) => u.mode === 'platform').reduce((s, u) => s + u.estimatedCostUsd, 0);
    expect(platformCost).toBeGreaterThan(0);
    expect(top.platformCostUsd).toBeCloseTo(platformCost, 9);
    expect(fromA.byModel.find((m: { model: string }) => m.model.startsWith('openai/'))).toMatchObject({ requests: AFFORDABLE + 1 });

    const gen = (s: { procedures: Array<{ path: string; transport: string; count: number }> }) =>
      s.procedures.find((p) => p.path === 'ai.generateText' && p.transport === 'rpc')?.count;
    // Statistics flush every 100 ms: wait until each instance sees every call.
    const flushed = (url: string) =>
      waitFor(
        async () => {
          const s = (await rpcCall(url, admin, 'admin.statistics', { days: 1 })).result;
          return (gen(s) ?? 0) >= CALLS + 1 && s;
        },
        { what: 'the statistics flushed' },
      );
    const sa = await flushed(a.url);
    const sb = await flushed(b.url);
    expect(gen(sa)).toBe(CALLS + 1);
    expect(gen(sb)).toBe(CALLS + 1);
  });
});
