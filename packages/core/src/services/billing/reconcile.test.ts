import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { OutageStorage, alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';

describe.each(backends)('outage and reconcile on $name', (backend) => {
  let store: OpenStore;
  let flaky: OutageStorage;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('billing-reconcile');
    flaky = new OutageStorage(store.storage);
    rt = await makeRuntime(flaky, { billing: { platformFeeRate: 0.1 } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it('a credit whose ledger append failed is repaired by reconcile, and its replay does not credit twice', async () => {
    flaky.failNext('append');
    await expect(rt.billing.credit({ userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'p-1', source: 'test' })).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: false, balances: { one_time: 500 }, sums: { one_time: 0 } });
    const report = await rt.billing.reconcile(alice.sub, { staleMs: 0 });
    expect(report).toMatchObject({ consistent: true, repaired: 1, cleared: 0 });
    expect(await rt.billing.credit({ userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'p-1', source: 'test' })).toMatchObject({ applied: false, balance: 500 });
    expect(await rt.billing.reconcile(alice.sub, { staleMs: 0 })).toMatchObject({ consistent: true, repaired: 0 });
  });

  it('a credit that failed before touching the balance leaves a stale claim that reconcile clears for a retry', async () => {
    flaky.failNext('increment');
    await expect(rt.billing.credit({ userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'p-2', source: 'test' })).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    await expect(rt.billing.credit({ userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'p-2', source: 'test' })).rejects.toMatchObject({ appCode: 'CONFLICT' });
    // Recent claims are left alone (the call may still be in flight).
    expect(await rt.billing.reconcile(alice.sub)).toMatchObject({ consistent: true, cleared: 0 });
    expect(await rt.billing.reconcile(alice.sub, { staleMs: 0 })).toMatchObject({ consistent: true, cleared: 1 });
    expect(await rt.billing.credit({ userId: alice.sub, tokens: 500, type: 'one_time', idempotencyKey: 'p-2', source: 'test' })).toMatchObject({ applied: true, balance: 500 });
  });

  it('a settle interrupted by the outage is repaired; the reservation is never charged twice', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 5000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 's-1' });
    flaky.failNext('append');
    await expect(rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' })).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: false });
    // The result was recorded before the append: a retry returns it without charging again.
    expect(await rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' })).toMatchObject({ tokensCharged: 110, remainingBalance: 4890 });
    expect(await rt.billing.reconcile(alice.sub, { staleMs: 0 })).toMatchObject({ consistent: true, repaired: 1, balances: { subscription: 4890 } });
  });

  it('a finish that could not drop the open hold is never released later nor charged twice', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 5000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'f-1' });
    flaky.failNext('delete');
    await expect(rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' })).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    // The open record is left 'closing': the expiry sweep must not refund it.
    expect(await rt.billing.sweepExpiredReservations(Date.now() + 3600_000)).toBe(0);
    expect(await rt.billing.reconcile(alice.sub, { staleMs: 0 })).toMatchObject({ consistent: true, cleared: 1, balances: { subscription: 4890 } });
    expect(await store.storage.keys('resv:')).toEqual([]);
    expect(await rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' })).toMatchObject({ tokensCharged: 110, remainingBalance: 4890 });
    await rt.billing.release(r, 'late');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(4890);
  });

  it('a reserve refused by the outage holds nothing', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 5000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    flaky.failNext('increment');
    await expect(rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'r-1' })).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    expect(await rt.billing.balances(alice.sub)).toMatchObject({ subscription: 5000 });
    expect(await rt.billing.reconcile(alice.sub, { staleMs: 0 })).toMatchObject({ consistent: true, cleared: 1 });
    expect((await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'r-1' })).tokens).toBe(1100);
  });
});
