import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens } from '@ai-backend/core/internal';
import { testPostgres, testRedis } from '@ai-backend/test-utils/services';
import { rpcCall, sleep, tokenFor, type AiServer } from './helpers/aiGateway.js';
import { startKeyCluster, type KeyCluster } from './helpers/apiKeyCluster.js';

/**
 * An API key's budget and rate limits over two real servers sharing PostgreSQL and Redis:
 * 60 concurrent calls spread over both get exactly what the key's budget affords (402 for the
 * rest, the owner's ledger audit clean, spend recorded per key); requests per minute, tokens per
 * minute and concurrent calls hold across the two instances (429 with Retry-After).
 */
const pgAt = await testPostgres();
const redisAt = await testRedis();
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 50;
const CALLS = 60;
const AFFORDABLE = 17;
const content = (i: number) => `key budget call ${String(i).padStart(3, '0')}`;
/** Tokens each call holds against the key's budget and, with this upstream, uses. */
const WORST = estimateTokens(content(0), SYSTEM, MAX_TOKENS);

describe.skipIf(!pgAt.ok || !redisAt.ok)('API key budgets and limits on two instances', () => {
  let cluster: KeyCluster;
  /** Fixed one-minute windows: both instances read the cluster's clock, moved to a fresh minute's start so a test's calls share one. */
  const freshMinute = () => cluster.clock.startWindow();
  let a: AiServer;
  let b: AiServer;
  let user: string;
  let sub: string;
  const newKey = (rules: Record<string, unknown>) => cluster.newKey({ name: 'limited', ...rules });
  const generate = (gw: AiServer, key: string, i: number, extra = '') =>
    rpcCall(gw.url, key, 'ai.generateText', {
      content: content(i) + extra,
      systemPrompt: SYSTEM,
      provider: 'openai',
      options: { maxTokens: MAX_TOKENS },
    });

  beforeAll(async () => {
    // Input counted as the server's worst case and output = maxTokens: each call uses exactly what it holds.
    cluster = await startKeyCluster('apikeylimits', pgAt, redisAt, {
      outputTokens: 1000,
      countInputTokens: (system, text) => estimateTokens(text, system, 0),
    });
    ({ a, b, user, sub } = cluster);
  });
  afterAll(() => cluster?.stop());

  it(`a key's budget under ${CALLS} concurrent calls over both instances gives exactly what it affords`, async () => {
    const { key, id } = await newKey({ budget: { total: { tokens: AFFORDABLE * WORST + Math.floor(WORST / 2) } } });
    const before = (await rpcCall(a.url, user, 'billing.getTokenBalance')).result.virtualTokenBalance as number;
    const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => generate(i % 2 ? b : a, key, i)));
    const ok = results.filter((r) => r.result);
    const refused = results.filter((r) => r.error);
    expect(ok).toHaveLength(AFFORDABLE);
    expect(refused).toHaveLength(CALLS - AFFORDABLE);
    for (const r of refused)
      expect(r.error!.data).toMatchObject({
        appCode: 'PAYMENT_REQUIRED',
        details: { reason: 'key_budget_exceeded', period: 'total', metric: 'tokens' },
      });
    // Charged to the owner's balance (fee included), the ledger consistent, the spend recorded per key.
    const after = (await rpcCall(b.url, user, 'billing.getTokenBalance')).result.virtualTokenBalance as number;
    expect(before - after).toBe(AFFORDABLE * (WORST + Math.ceil(WORST * 0.1)));
    expect(await a.runtime.billing.ledger.audit(sub)).toMatchObject({ consistent: true });
    const got = await rpcCall(b.url, user, 'keys.get', { id });
    const total = got.result.usage.periods.find((p: { period: string }) => p.period === 'total');
    expect(got.result.usage.calls).toBe(AFFORDABLE);
    expect(total).toMatchObject({ spent: { tokens: AFFORDABLE * WORST }, reserved: { tokens: 0 } });
    const analytics = await rpcCall(a.url, user, 'billing.getUsageAnalytics', { days: 1 });
    expect(analytics.result.byApiKey.find((k: { id: string }) => k.id === id)).toMatchObject({
      calls: AFFORDABLE,
      status: 'active',
      total: { tokens: AFFORDABLE * WORST },
      day: { tokens: AFFORDABLE * WORST },
    });
    const history = await rpcCall(a.url, user, 'billing.getUsageHistory', { limit: 100 });
    expect(JSON.stringify(history.result)).toContain(`"apiKeyId":"${id}"`);
    // The HTTP answer on /trpc is 402.
    const t = await fetch(`${a.url}/trpc/ai.generateText`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ json: { content: content(1), systemPrompt: SYSTEM, provider: 'openai', options: { maxTokens: MAX_TOKENS } } }),
    });
    expect(t.status).toBe(402);
  });

  it("a call paid with the caller's own provider key counts in the key's calls and BYOK tokens, never in its budget", async () => {
    // A budget smaller than one call's worst case: a platform-paid call is refused, a BYOK one is not.
    const { key, id } = await newKey({ budget: { total: { tokens: Math.floor(WORST / 2) } } });
    expect((await generate(a, key, 0)).error?.data).toMatchObject({ details: { reason: 'key_budget_exceeded' } });
    const byok = await rpcCall(b.url, key, 'ai.generateText', {
      content: content(7),
      systemPrompt: SYSTEM,
      provider: 'openai',
      apiKey: 'sk-own-key-limits-0001',
      options: { maxTokens: MAX_TOKENS },
    });
    expect(byok.error).toBeUndefined();
    const used = (byok.result.usageInfo?.tokensUsed ?? byok.result.data?.usage?.totalTokens) as number;
    expect(used).toBeGreaterThan(0);
    const got = await rpcCall(a.url, user, 'keys.get', { id });
    expect(got.result.usage.calls).toBe(1);
    for (const period of got.result.usage.periods) {
      expect(period, period.period).toMatchObject({ spent: { tokens: 0, usd: 0, byokTokens: used }, reserved: { tokens: 0 } });
    }
    const analytics = await rpcCall(b.url, user, 'billing.getUsageAnalytics', { days: 1 });
    expect(analytics.result.byApiKey.find((k: { id: string }) => k.id === id)).toMatchObject({
      calls: 1,
      day: { tokens: 0, byokTokens: used },
      total: { tokens: 0, byokTokens: used },
    });
  });

  it('requests per minute hold across both instances: 429 with Retry-After', async () => {
    const { key } = await newKey({ limits: { requestsPerMinute: 6 } });
    freshMinute();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => rpcCall(i % 2 ? b.url : a.url, key, 'billing.getTokenBalance')));
    expect(results.filter((r) => r.result)).toHaveLength(6);
    const refused = results.filter((r) => r.error);
    expect(refused).toHaveLength(4);
    for (const r of refused) expect(r.error!.data).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_requests_limit' } });
    const t = await fetch(`${b.url}/trpc/billing.getTokenBalance`, { headers: { authorization: `Bearer ${key}` } });
    expect(t.status).toBe(429);
    expect(Number(t.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const v1 = await fetch(`${a.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(v1.status).toBe(429);
    expect(v1.headers.get('retry-after')).toBeTruthy();
  });

  it("tokens per minute hold across both instances, admitted by each call's worst case", async () => {
    // Each call holds WORST tokens at admission (input bound plus maxTokens) and, with this
    // upstream, uses exactly that: two calls fit in 2 × WORST, the third is refused.
    const { key } = await newKey({ limits: { tokensPerMinute: 2 * WORST } });
    freshMinute();
    expect((await generate(a, key, 1)).result).toBeDefined();
    expect((await generate(b, key, 2)).result).toBeDefined();
    const third = await generate(a, key, 3);
    expect(third.error?.data).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_tokens_limit' } });
    expect((await generate(b, key, 4)).error?.data).toMatchObject({ appCode: 'RATE_LIMITED' });
  });

  it('a concurrent burst over both instances cannot exceed tokens per minute', async () => {
    // Before reservations, a call was admitted while the minute's count was within the limit and
    // counted when it ended: a burst of N concurrent calls all got in (N × WORST tokens).
    const slow = ' [[upstream:latency=300]]';
    const worst = estimateTokens(content(100) + slow, SYSTEM, MAX_TOKENS);
    const { key, id } = await newKey({ limits: { tokensPerMinute: 3 * worst } });
    freshMinute();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => generate(i % 2 ? b : a, key, 100 + i, slow)));
    expect(results.filter((r) => r.result)).toHaveLength(3);
    for (const r of results.filter((r) => r.error))
      expect(r.error!.data).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_tokens_limit' } });
    const got = await rpcCall(b.url, user, 'keys.get', { id });
    expect(got.result.usage.calls).toBe(3);
  });

  it('concurrent calls hold across both instances', async () => {
    const { key } = await newKey({ limits: { concurrent: 2 } });
    const slow = (gw: AiServer, i: number) => generate(gw, key, i, ' [[upstream:latency=1500]]');
    // Calls 3 and 4 start 400 ms later, a deliberate head start for 1 and 2; which two get the slots
    // does not matter to the assertions.
    const results = await Promise.all([
      slow(a, 1),
      slow(b, 2),
      (async () => (await sleep(400), slow(a, 3)))(),
      (async () => (await sleep(400), slow(b, 4)))(),
    ]);
    expect(results.filter((r) => r.result)).toHaveLength(2);
    for (const r of results.filter((r) => r.error))
      expect(r.error!.data).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_concurrent_limit' } });
    // The slots come back when the calls end.
    expect((await generate(b, key, 5)).result).toBeDefined();
  });

  it('metrics count per limit, never per key', async () => {
    const res = await fetch(a.url + '/metrics', {
      headers: { authorization: `Bearer ${await tokenFor('limits-admin', { admin: true })}` },
    });
    const text = await res.text();
    expect(text).toMatch(/ai_backend_api_key_refusals_total\{limit="budget"\} \d+/);
    expect(text).toMatch(/ai_backend_api_key_authentications_total\{outcome="ok"\} \d+/);
    expect(text).toMatch(/ai_backend_api_key_tokens_total\{payer="platform"\} \d+/);
    expect(text).not.toMatch(/aib_/);
  });
});
