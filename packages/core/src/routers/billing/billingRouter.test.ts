import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { admin, alice, backends, bob, call, makeRuntime, type OpenStore } from '../../services/billing/__tests__/kit.js';

const PROCEDURES: Array<[string, unknown]> = [
  ['billing.getTokenBalance', undefined],
  ['billing.getUserTokenBalances', undefined],
  ['billing.getPurchaseHistory', {}],
  ['billing.getTopupHistory', {}],
  ['billing.getUsageHistory', {}],
  ['billing.getConsumptionHistory', {}],
  ['billing.getUsageAnalytics', {}],
  ['billing.planConsumption', { estimatedTokens: 10 }],
  ['billing.creditTokens', { userId: 'x', tokens: 1, type: 'one_time', idempotencyKey: 'k' }],
];

describe.each(backends)('billing router on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('billing-router');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  const creditAs = (who: typeof admin, input: Record<string, unknown>) => call(rt, 'billing.creditTokens', input, who);

  /** alice: 10000 subscription, 2000 one-time, one platform call and one BYOK call. */
  async function seed() {
    await creditAs(admin, { userId: alice.sub, tokens: 10_000, type: 'subscription', idempotencyKey: 'sub-1' });
    await creditAs(admin, { userId: alice.sub, tokens: 2000, type: 'one_time', idempotencyKey: 'pack-1' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'call-1' });
    await rt.billing.settle(r, { tokensUsed: 400, provider: 'openai', model: 'gpt-x', metadata: { name: 'summary' } });
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'anthropic',
      model: 'claude-y',
      tokensUsed: 300,
      estimatedCostUsd: 0.01,
      requestId: 'call-2',
    });
  }

  it.each(PROCEDURES)('%s needs an identity', async (path, input) => {
    await expect(call(rt, path, input, null)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('creditTokens is for administrators only, idempotent, and takes exactly the documented input', async () => {
    await expect(creditAs(alice, { userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'k1' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const first = await creditAs(admin, { userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'k1' });
    expect(first).toMatchObject({ userId: alice.sub, type: 'one_time', applied: true, balance: 1000 });
    expect(await creditAs(admin, { userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'k1' })).toMatchObject({
      applied: false,
      balance: 1000,
    });
    await expect(
      creditAs(admin, { userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'k2', source: 'x' }),
    ).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(creditAs(admin, { userId: alice.sub, tokens: 0, type: 'one_time', idempotencyKey: 'k3' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(creditAs(admin, { userId: alice.sub, tokens: 2.5, type: 'one_time', idempotencyKey: 'k4' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(creditAs(admin, { userId: alice.sub, tokens: 5, type: 'gold', idempotencyKey: 'k5' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true, balances: { one_time: 1000 } });
  });

  it('balances and lifetime totals; each user sees only their own', async () => {
    await seed();
    const bal = await call(rt, 'billing.getTokenBalance', undefined, alice);
    // 1000 + fee held (1100); 400 + 40 charged, from subscription.
    expect(bal).toEqual({
      virtualTokenBalance: 11_560,
      balances: { subscription: 9560, one_time: 2000 },
      totalTokensPurchased: 12_000,
      totalTokensUsed: 400,
      platformFeeCollected: 40,
    });
    expect(await call(rt, 'billing.getUserTokenBalances', undefined, alice)).toEqual({
      balances: [
        { balanceType: 'subscription', virtualTokenBalance: 9560 },
        { balanceType: 'one_time', virtualTokenBalance: 2000 },
      ],
      summary: { totalSubscriptionTokens: 9560, totalOneTimeTokens: 2000, totalTokens: 11_560 },
    });
    expect((await call(rt, 'billing.getTokenBalance', undefined, bob)).virtualTokenBalance).toBe(0);
    expect((await call(rt, 'billing.getUsageHistory', {}, bob)).usage).toEqual([]);
  });

  it('purchase and top-up history, with type filter and limit', async () => {
    await seed();
    await creditAs(admin, { userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'pack-2' });
    const all = await call(rt, 'billing.getPurchaseHistory', { type: 'all' }, alice);
    expect(all.purchases.map((p: { tokens: number }) => p.tokens)).toEqual([500, 2000, 10_000]);
    expect(all.summary).toEqual({ totalPurchases: 3, totalTokens: 12_500, subscriptionPurchases: 1, oneTimePurchases: 2 });
    expect((await call(rt, 'billing.getPurchaseHistory', { type: 'subscription' }, alice)).purchases).toMatchObject([
      { type: 'subscription', tokens: 10_000, source: 'admin' },
    ]);
    expect((await call(rt, 'billing.getPurchaseHistory', { limit: 1 }, alice)).purchases).toHaveLength(1);
    expect((await call(rt, 'billing.getPurchaseHistory', undefined, alice)).purchases).toHaveLength(3);
    expect((await call(rt, 'billing.getTopupHistory', { limit: 10 }, alice)).topups.map((p: { tokens: number }) => p.tokens)).toEqual([
      500, 2000,
    ]);
  });

  it('usage and consumption history show platform and BYOK calls and what paid for them', async () => {
    await seed();
    const { usage } = await call(rt, 'billing.getUsageHistory', { limit: 10 }, alice);
    expect(usage).toMatchObject([
      {
        mode: 'byok',
        provider: 'anthropic',
        model: 'claude-y',
        tokensUsed: 300,
        tokensCharged: 0,
        estimatedCostUsd: 0.01,
        requestId: 'call-2',
      },
      {
        mode: 'platform',
        provider: 'openai',
        model: 'gpt-x',
        tokensUsed: 400,
        tokensCharged: 440,
        platformFee: 40,
        metadata: { name: 'summary' },
        requestId: 'call-1',
      },
    ]);
    const { consumption } = await call(rt, 'billing.getConsumptionHistory', {}, alice);
    expect(consumption).toMatchObject([
      { requestId: 'call-2', paidBy: 'byok', tokensCharged: 0 },
      { requestId: 'call-1', paidBy: { subscription: 440 }, tokensCharged: 440, platformFee: 40 },
    ]);
  });

  it('usage analytics: totals per day, provider and model, optional history', async () => {
    await seed();
    const a = await call(rt, 'billing.getUsageAnalytics', { days: 7, includeHistory: true, historyLimit: 1 }, alice);
    expect(a.totals).toMatchObject({
      requests: 2,
      platformRequests: 1,
      byokRequests: 1,
      tokensUsed: 700,
      tokensCharged: 440,
      platformFee: 40,
    });
    expect(a.byProvider.openai).toMatchObject({ requests: 1, tokensUsed: 400 });
    expect(a.byProvider.anthropic).toMatchObject({ requests: 1, tokensUsed: 300, estimatedCostUsd: 0.01 });
    expect(Object.keys(a.byModel).sort()).toEqual(['anthropic/claude-y', 'openai/gpt-x']);
    expect(a.byDay).toEqual([
      {
        date: new Date().toISOString().slice(0, 10),
        requests: 2,
        tokensUsed: 700,
        tokensCharged: 440,
        platformFee: 40,
        estimatedCostUsd: 0.01,
      },
    ]);
    expect(a.history).toHaveLength(1);
    expect(a.period.days).toBe(7);
    expect((await call(rt, 'billing.getUsageAnalytics', undefined, alice)).history).toBeUndefined();
  });

  it('planConsumption previews the payer and what remains', async () => {
    await creditAs(admin, { userId: alice.sub, tokens: 500, type: 'subscription', idempotencyKey: 's' });
    await creditAs(admin, { userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'o' });
    const p = await call(rt, 'billing.planConsumption', { estimatedTokens: 1000 }, alice);
    expect(p).toMatchObject({
      totalTokensNeeded: 1100,
      payer: 'platform',
      viable: true,
      plan: [
        { source: 'subscription', tokensToConsume: 500 },
        { source: 'one_time', tokensToConsume: 600 },
      ],
      remainingAfter: { subscription: 0, one_time: 400 },
    });
    expect(p.notifications).toContain('your balance would fall below 1000 tokens');
    expect(p.prefs).toBeUndefined();
    expect(await call(rt, 'billing.planConsumption', { estimatedTokens: 5000 }, alice)).toMatchObject({ payer: 'none', viable: false });
    expect(await call(rt, 'billing.planConsumption', { estimatedTokens: 5000, hasApiKey: true }, alice)).toMatchObject({
      payer: 'byok',
      viable: true,
    });
    // Nothing was held by a preview.
    expect((await call(rt, 'billing.getTokenBalance', undefined, alice)).virtualTokenBalance).toBe(1500);
  });

  it.each([
    ['billing.getUsageHistory', { limit: 0 }, 'limit must be an integer from 1 to 1000'],
    ['billing.getUsageHistory', { limit: 1001 }, 'limit must be an integer from 1 to 1000'],
    ['billing.getConsumptionHistory', { limit: 2.5 }, 'limit must be an integer from 1 to 1000'],
    ['billing.getPurchaseHistory', { limit: -1 }, 'limit must be an integer from 1 to 1000'],
    ['billing.getTopupHistory', { limit: 'ten' }, 'limit must be an integer from 1 to 1000'],
    ['billing.getUsageAnalytics', { days: 0 }, 'days must be an integer from 1 to 365'],
    ['billing.getUsageAnalytics', { days: 366 }, 'days must be an integer from 1 to 365'],
    ['billing.getUsageAnalytics', { historyLimit: 1001 }, 'historyLimit must be an integer from 1 to 1000'],
    ['billing.planConsumption', { estimatedTokens: -1 }, 'estimatedTokens must be an integer from 0 to 10000000'],
    ['billing.planConsumption', { estimatedTokens: 10_000_001 }, 'estimatedTokens must be an integer from 0 to 10000000'],
    ['billing.planConsumption', {}, 'estimatedTokens must be an integer from 0 to 10000000'],
  ])('%s refuses %j with a clear error', async (path, input, message) => {
    const err = await call(rt, path, input, alice).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'BAD_REQUEST' });
    expect((err as Error).message).toContain(message);
  });

  it('accepts the bounds themselves', async () => {
    await expect(call(rt, 'billing.getUsageHistory', { limit: 1000 }, alice)).resolves.toBeTruthy();
    await expect(
      call(rt, 'billing.getUsageAnalytics', { days: 365, historyLimit: 1000, includeHistory: true }, alice),
    ).resolves.toBeTruthy();
    await expect(call(rt, 'billing.planConsumption', { estimatedTokens: 10_000_000 }, alice)).resolves.toMatchObject({ payer: 'none' });
    await expect(call(rt, 'billing.planConsumption', { estimatedTokens: 0 }, alice)).resolves.toMatchObject({
      payer: 'platform',
      totalTokensNeeded: 0,
    });
  });
});
