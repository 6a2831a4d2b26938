import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, makeRuntime, type OpenStore } from './__tests__/kit.js';

/** More corrupt holds than one sweep query returns (SWEEP_BATCH), so they fill a whole first page. */
const CORRUPT = 201;
const LOG_LINE = 'billing: could not release an expired reservation; the sweep goes on without it';

/**
 * Due holds the sweep cannot release (a record that is not a hold, a key that does not decode)
 * sit first on the due index, before good ones: one round still releases every good hold, logs
 * each bad one once, and counts every failed release in the metric.
 */
describe.each(backends)('an expired-hold sweep past holds it cannot release, on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  const logs: string[] = [];
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    logs.length = 0;
    store = await backend.open('sweep-failure');
    rt = await makeRuntime(store.storage, { billing: { reservationTtlMs: 60_000, platformFeeRate: 0 }, metrics: { enabled: true } }, logs);
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it('releases every good due hold in one round; each bad one is logged once and counted per round', async () => {
    const early = Date.now() - 60_000;
    // A key whose user part is not valid percent-encoding, due first of all.
    await store.storage.transact([], () => ({
      writes: [{ op: 'set', key: 'hold:%E0%A4%A:broken', value: { reservation: { requestId: 'broken' } }, dueAt: early - 1 }],
      result: undefined,
    }));
    for (let i = 0; i < CORRUPT; i += 50)
      await store.storage.transact([], () => ({
        writes: Array.from({ length: Math.min(50, CORRUPT - i) }, (_, j) => ({
          op: 'set' as const,
          key: `hold:corrupt-user:bad-${i + j}`,
          value: { reservation: 'not a reservation' },
          dueAt: early + i + j,
        })),
        result: undefined,
      }));
    for (const who of [alice, bob])
      await rt.billing.credit({ userId: who.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'good-1' });
    await rt.billing.reserve({ identity: alice, tokens: 50, requestId: 'good-2' });
    await rt.billing.reserve({ identity: bob, tokens: 70, requestId: 'good-3' });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(850);

    // Past the good holds' expiry; the runtime's own sweeper (every 30 s) stays out of the test.
    const later = Date.now() + 120_000;
    expect(await rt.billing.sweepExpiredReservations(later)).toBe(3);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
    expect((await rt.billing.balances(bob.sub)).subscription).toBe(1000);
    expect(logs.filter((l) => l.includes(LOG_LINE))).toHaveLength(CORRUPT + 1);

    // The next round finds only the bad ones: counted again, not logged again.
    expect(await rt.billing.sweepExpiredReservations(later)).toBe(0);
    expect(logs.filter((l) => l.includes(LOG_LINE))).toHaveLength(CORRUPT + 1);
    const { body } = await rt.metrics!.exposition();
    expect(body).toContain(`ai_backend_hold_sweep_failures_total ${2 * (CORRUPT + 1)}`);
  });
});
