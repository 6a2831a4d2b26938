import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import type { Identity } from '../../kernel/identity.js';
import { alice, backends, call, makeRuntime, type OpenStore } from '../billing/__tests__/kit.js';
import type { Reservation } from '../billing/types.js';

const CALLS = 60;
const WORST = 100;
const AFFORDABLE = 17;

describe.each(backends)('an API key budget in the reservation on $name', (backend) => {
  let store: OpenStore;
  let runtime: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('apikeybudget');
    runtime = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
    await runtime.billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
  });
  afterEach(async () => {
    await runtime.close();
    await store.cleanup();
  });

  async function keyIdentity(rules: object): Promise<{ identity: Identity; id: string }> {
    const { key, apiKey } = await call(runtime, 'keys.create', { name: 'b', ...rules }, alice);
    const auth = await runtime.authenticate(key);
    if (!auth.ok) throw auth.error;
    return { identity: auth.identity, id: apiKey.id };
  }

  it(`${CALLS} concurrent reservations get exactly what the key's total budget affords; settle, release and the sweeper keep its figures exact`, async () => {
    const { identity, id } = await keyIdentity({ budget: { total: { tokens: AFFORDABLE * WORST + WORST / 2 } } });
    const outcomes = await Promise.allSettled(
      Array.from({ length: CALLS }, (_, i) => runtime.billing.reserve({ identity, tokens: WORST, requestId: `r-${i}`, costUsd: 0.001 })),
    );
    const held = outcomes.filter((o): o is PromiseFulfilledResult<Reservation> => o.status === 'fulfilled').map((o) => o.value);
    expect(held).toHaveLength(AFFORDABLE);
    for (const o of outcomes.filter((o) => o.status === 'rejected'))
      expect((o as PromiseRejectedResult).reason).toMatchObject({
        appCode: 'PAYMENT_REQUIRED',
        details: { reason: 'key_budget_exceeded', period: 'total' },
      });
    expect(held.every((r) => r.apiKey?.keyId === id)).toBe(true);
    let usage = await runtime.keys.usage(id);
    expect(usage.periods.find((p) => p.period === 'total')).toMatchObject({
      reserved: { tokens: AFFORDABLE * WORST },
      spent: { tokens: 0 },
    });

    const [settled, released] = [held.slice(0, 10), held.slice(10)];
    await Promise.all(
      settled.map((r) => runtime.billing.settle(r, { tokensUsed: 40, provider: 'openai', model: 'gpt-4.1-mini', costUsd: 0.0004 })),
    );
    await Promise.all(released.map((r) => runtime.billing.release(r, 'test')));
    usage = await runtime.keys.usage(id);
    expect(usage.calls).toBe(10);
    for (const p of usage.periods) expect(p).toMatchObject({ spent: { tokens: 400, usd: 0.004 }, reserved: { tokens: 0, usd: 0 } });

    // A hold left behind (a crashed instance) is released by the sweeper, key figures included.
    const lost = await runtime.billing.reserve({ identity, tokens: WORST, requestId: 'lost', costUsd: 0.001 });
    expect(lost.apiKey?.keyId).toBe(id);
    expect(await runtime.billing.sweepExpiredReservations(Date.parse(lost.expiresAt) + 1)).toBe(1);
    usage = await runtime.keys.usage(id);
    expect(usage.periods.find((p) => p.period === 'total')).toMatchObject({ reserved: { tokens: 0 }, spent: { tokens: 400 } });
    expect(await runtime.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
    const history = await runtime.billing.usageHistory(alice.sub, { limit: 50 });
    expect(history.items.filter((i) => (i as { apiKeyId?: string }).apiKeyId === id)).toHaveLength(10);
  });

  it('a money budget per day refuses an unpriced model, and a key revoked after authentication is refused at the reservation', async () => {
    const { identity, id } = await keyIdentity({ budget: { day: { usd: 1 } } });
    await expect(runtime.billing.reserve({ identity, tokens: WORST, requestId: 'unpriced' })).rejects.toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
      details: { reason: 'key_model_not_priced' },
    });
    await expect(runtime.billing.reserve({ identity, tokens: WORST, requestId: 'dear', costUsd: 1.5 })).rejects.toMatchObject({
      details: { reason: 'key_budget_exceeded', period: 'day', metric: 'usd' },
    });
    expect(await runtime.billing.reserve({ identity, tokens: WORST, requestId: 'ok', costUsd: 0.5 })).toMatchObject({
      apiKey: { keyId: id },
    });
    await call(runtime, 'keys.revoke', { id }, alice);
    await expect(runtime.billing.reserve({ identity, tokens: WORST, requestId: 'after', costUsd: 0.1 })).rejects.toMatchObject({
      appCode: 'INVALID_TOKEN',
    });
    expect(await runtime.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });
});
