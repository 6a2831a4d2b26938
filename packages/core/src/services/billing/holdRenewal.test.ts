import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';

const TTL = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A call longer than `reservationTtlMs` (a stream that keeps producing output: `ai.timeoutMs` only
 * bounds the pauses) keeps its hold: the hold is renewed while the call runs, so no sweep, on any
 * instance, gives it back under the call, and the balance it holds cannot be spent twice.
 */
describe.each(backends)('a running call’s hold is renewed, on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('hold-renewal');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1, reservationTtlMs: TTL } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  const request = (requestId: string) => ({
    identity: alice,
    requestId,
    provider: 'openai' as const,
    estimatedTokens: 100,
    byokAllowed: true,
    serverPays: true,
  });

  it('outlives its TTL while open: swept by nobody, the balance stays held, the settle charges the usage', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 200, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const hold = await rt.billing.hold(request('long-1'));
    expect(hold.mode).toBe('platform');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(90);
    // Two and a half TTLs later, with a sweep (this instance's or another's) at every step.
    for (let i = 0; i < 5; i++) {
      await sleep(TTL / 2);
      expect(await rt.billing.sweepExpiredReservations(Date.now())).toBe(0);
    }
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(90);
    // A second call cannot take what the first still holds.
    await expect(rt.billing.hold(request('long-2'))).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    const charge = await hold.settle({ tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' });
    expect(charge).toMatchObject({ tokenUsage: { tokensUsed: 50, tokensCharged: 55 } });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(145);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it('a closed hold is no longer renewed; one never closed (its process gone) expires as before', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 200, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const done = await rt.billing.hold(request('short-1'));
    await done.release('test');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(200);
    // A hold made without a running call (a crashed instance's): nothing renews it.
    await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'orphan-1' });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(90);
    await sleep(TTL + 100);
    // Released by this sweep, or already by the runtime's own (it sweeps every TTL / 2).
    await rt.billing.sweepExpiredReservations(Date.now());
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(200);
  });
});
