import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';

/**
 * A settle that arrives after its hold expired and was swept (the store was down when the call
 * ended; another instance released the hold meanwhile) still charges the call: never a free call.
 */
describe.each(backends)('a settle after its hold expired, on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('late-settle');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1, reservationTtlMs: 1000 } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it('charges the whole usage from the balance; the ledger agrees; a replay returns the first result', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'late-1' });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(890);
    // Another instance's sweep, past the expiry.
    expect(await rt.billing.sweepExpiredReservations(Date.now() + 5_000)).toBe(1);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
    const settled = await rt.billing.settle(r, { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' });
    expect(settled).toMatchObject({ tokensUsed: 50, tokensCharged: 55, platformFee: 5 });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(945);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
    expect(await rt.billing.settle(r, { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' })).toEqual(settled);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(945);
  });

  it('a hold released because the call failed is not charged by a settle after it', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'late-2' });
    await rt.billing.release(r, 'upstream failed');
    await expect(rt.billing.settle(r, { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' })).rejects.toMatchObject({
      appCode: 'CONFLICT',
    });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
  });
});
