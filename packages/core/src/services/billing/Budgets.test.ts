import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../config/schema.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, makeRuntime, type OpenStore } from './__tests__/kit.js';
import { budgetKeys } from './Budgets.js';
import type { SpendRecord } from '../spend/periodSpend.js';
import type { BillingEventMap, Reservation } from './types.js';

const CALLS = 60;
const TOKENS = 100; // worst case per call, fee excluded (budgets count model tokens)
const AFFORDABLE = 20;
const today = () => new Date().toISOString().slice(0, 10);

/** An alert receiver nobody listens on, with retries far away: outbox records stay put for counting. */
const parkedAlerts: NonNullable<ConfigInput>['alerts'] = {
  webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'x'.repeat(32) }],
  retryBaseMs: 3_600_000,
  retryMaxMs: 3_600_000,
  pollIntervalMs: 60_000,
};

describe.each(backends)('budgets on $name', (backend) => {
  let store: OpenStore;
  const runtimes: Runtime[] = [];
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('budgets');
  });
  afterEach(async () => {
    for (const rt of backend.name === 'memory' ? runtimes.slice(0, 1) : runtimes) await rt.close();
    runtimes.length = 0;
    await store.cleanup();
  });

  /** Two instances on the store (on memory and SQLite the same store object). */
  async function two(config: ConfigInput = {}): Promise<[Runtime, Runtime]> {
    const full: ConfigInput = { billing: { platformFeeRate: 0.1 }, alerts: parkedAlerts, ...config };
    runtimes.push(await makeRuntime(store.storage, full), await makeRuntime(await store.another(), full));
    return [runtimes[0]!, runtimes[1]!];
  }

  const spendOf = async (rt: Runtime, userId: string) => (await rt.storage.get<SpendRecord>(budgetKeys.spend(userId)))?.daily;

  it(`${CALLS} concurrent calls on two instances against a token budget for ${AFFORDABLE}: exactly ${AFFORDABLE} are held, settle and release keep the figures exact`, async () => {
    const [a, b] = await two();
    await a.billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await a.billing.budgets.set(alice.sub, 'daily', { tokens: AFFORDABLE * TOKENS + TOKENS / 2, thresholds: [0.5] }, 'admin');

    let maxSeen = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const s = await spendOf(b, alice.sub);
        if (s) maxSeen = Math.max(maxSeen, s.tokens + s.reservedTokens);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const results = await Promise.allSettled(
      Array.from({ length: CALLS }, (_, i) =>
        (i % 2 ? b : a).billing.reserve({ identity: alice, tokens: TOKENS, requestId: `b-${i}`, costUsd: 0.001 }),
      ),
    );
    const held = results.filter((r): r is PromiseFulfilledResult<Reservation> => r.status === 'fulfilled').map((r) => r.value);
    const refused = results
      .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
      .map((r) => r.reason as { appCode: string; details: Record<string, unknown> });
    expect(held).toHaveLength(AFFORDABLE);
    expect(refused).toHaveLength(CALLS - AFFORDABLE);
    for (const e of refused)
      expect(e).toMatchObject({
        appCode: 'PAYMENT_REQUIRED',
        details: { reason: 'budget_exceeded', period: 'daily', metric: 'tokens', limit: 2050, requested: TOKENS },
      });
    expect(await spendOf(a, alice.sub)).toMatchObject({
      tokens: 0,
      reservedTokens: AFFORDABLE * TOKENS,
      reservedUsdNanos: AFFORDABLE * 1_000_000,
    });

    // Half settle with less than they held (on both instances), the other half are released.
    await Promise.all(
      held.map((r, i) =>
        i % 2 ? a.billing.settle(r, { tokensUsed: 40, provider: 'openai', model: 'm', costUsd: 0.0004 }) : b.billing.release(r, 'failed'),
      ),
    );
    watching = false;
    await watcher;
    expect(maxSeen).toBeLessThanOrEqual(AFFORDABLE * TOKENS + TOKENS / 2);
    expect(await spendOf(a, alice.sub)).toMatchObject({
      tokens: (AFFORDABLE / 2) * 40,
      reservedTokens: 0,
      usdNanos: (AFFORDABLE / 2) * 400_000,
      reservedUsdNanos: 0,
    });
    const view = await b.billing.budgets.view(alice.sub);
    expect(view.periods[0]).toMatchObject({
      period: 'daily',
      source: 'user',
      limits: { tokens: 2050, usd: null },
      spent: { tokens: 400, usd: 0.004 },
      remaining: { tokens: 1650, usd: null },
    });
    // The budget covers platform tokens only: bob has none and is not affected.
    expect((await a.billing.budgets.view(bob.sub)).periods[0]).toMatchObject({ source: null, spent: { tokens: 0 } });
  });

  it('a money budget refuses what would cost more than is left, and its exceeded alert is written once per period', async () => {
    const [a, b] = await two();
    const exceeded: BillingEventMap['budgetExceeded'][0][] = [];
    for (const rt of [a, b]) rt.billing.events.on('budgetExceeded', (e) => exceeded.push(e));
    await a.billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await a.billing.budgets.set(alice.sub, 'monthly', { usd: 0.01 }, 'admin');
    // 0.003 USD worst case each: 3 fit in 0.01, the 4th would not.
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? b : a).billing.reserve({ identity: alice, tokens: 10, requestId: `m-${i}`, costUsd: 0.003 }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(exceeded).toHaveLength(1);
    expect(exceeded[0]).toMatchObject({ userId: alice.sub, period: 'monthly', metric: 'usd', limit: 0.01 });
    const outbox = (await a.storage.keys('alerts:outbox:')).filter((k) => k.includes('budgetExceeded'));
    expect(outbox).toEqual([`alerts:outbox:budgetExceeded:${alice.sub}:monthly:${today().slice(0, 7)}:usd:0`]);
    // An unpriced model cannot run under a money budget.
    await expect(a.billing.reserve({ identity: alice, tokens: 10, requestId: 'unpriced' })).rejects.toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
      details: { reason: 'model_not_priced' },
    });
  });

  it('thresholds: each is alerted exactly once per period, from whichever instance settles the crossing call', async () => {
    const [a, b] = await two({ billing: { platformFeeRate: 0.1, defaultBudget: { daily: { tokens: 1000, thresholds: [0.5, 0.8] } } } });
    const crossed: number[] = [];
    for (const rt of [a, b]) rt.billing.events.on('budgetThreshold', (e) => crossed.push(e.threshold));
    await a.billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    // 18 calls of 50 tokens settled concurrently: 900 tokens, past 0.5 and 0.8 of the default budget.
    const held = await Promise.all(
      Array.from({ length: 18 }, (_, i) => (i % 2 ? b : a).billing.reserve({ identity: alice, tokens: 50, requestId: `t-${i}` })),
    );
    await Promise.all(held.map((r, i) => (i % 2 ? a : b).billing.settle(r, { tokensUsed: 50, provider: 'openai', model: 'm' })));
    expect(crossed.sort()).toEqual([0.5, 0.8]);
    const outbox = (await a.storage.keys('alerts:outbox:')).filter((k) => k.includes('budgetThreshold')).sort();
    expect(outbox).toEqual([0.5, 0.8].map((t) => `alerts:outbox:budgetThreshold:${alice.sub}:daily:${today()}:tokens:${t}:0`));
    const view = await a.billing.budgets.view(alice.sub);
    expect(view.periods[0]).toMatchObject({ source: 'default', spent: { tokens: 900 }, thresholds: [0.5, 0.8] });
    // An administrator exempts alice from the default: an empty budget of her own.
    await a.billing.budgets.set(alice.sub, 'daily', {}, 'admin');
    await expect(b.billing.reserve({ identity: alice, tokens: 5000, requestId: 'big' })).resolves.toMatchObject({ userId: alice.sub });
    expect(await a.billing.budgets.remove(alice.sub, 'daily', 'admin')).toBe(true);
    await expect(b.billing.reserve({ identity: alice, tokens: 50, requestId: 'after' })).rejects.toMatchObject({
      details: { period: 'daily', spent: 900, reserved: 5000 },
    });
  });
});
