import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';

/**
 * Replayed settlements: the same hold settled again (a retry after a timeout whose first attempt
 * committed, two instances, a restart between), and a settle racing the expiry sweep. Each hold
 * is charged exactly once: never twice, never free.
 */
const USAGE = { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' };
const CHARGE = 55; // 50 used + 10% fee

describe.each(backends)('replayed and racing settlements, on $name', (backend) => {
  let store: OpenStore;
  let a: Runtime;
  let b: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('settle-replay');
    const config = { billing: { platformFeeRate: 0.1, reservationTtlMs: 60_000 } };
    a = await makeRuntime(store.storage, config);
    b = await makeRuntime(await store.another(), config);
    await a.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
  });
  afterEach(async () => {
    await a.close();
    await b.close();
    await store.cleanup();
  });

  async function expectChargedOnce(calls: number): Promise<void> {
    expect((await a.billing.balances(alice.sub)).subscription).toBe(1000 - calls * CHARGE);
    const audit = await a.billing.ledger.audit(alice.sub);
    expect(audit.consistent).toBe(true);
    const entries = await a.storage.readLog<{ kind: string }>(`ledger:${alice.sub}`);
    expect(entries.filter((e) => e.record.kind === 'settle')).toHaveLength(calls);
  }

  it('the same hold settled by two instances at once, and again after a restart: charged once, every answer the same', async () => {
    const r = await a.billing.reserve({ identity: alice, tokens: 100, requestId: 'replay-1' });
    const [x, y] = await Promise.all([a.billing.settle(r, USAGE), b.billing.settle(r, USAGE)]);
    expect(y).toEqual(x);
    // A restarted instance retrying the settle it had sent before the restart.
    const c = await makeRuntime(await store.another(), { billing: { platformFeeRate: 0.1 } });
    try {
      expect(await c.billing.settle(r, { ...USAGE, tokensUsed: 80 })).toEqual(x);
      await expectChargedOnce(1);
    } finally {
      await c.close(); // closes the store on memory and SQLite (one store per process): last
    }
  });

  it('a settle racing the expiry sweep (a clock far ahead): whichever wins, the call is charged once, in full', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await a.billing.reserve({ identity: alice, tokens: 100, requestId: `race-${i}` });
      await Promise.all([b.billing.sweepExpiredReservations(Date.now() + 3_600_000), a.billing.settle(r, USAGE)]);
      expect(await a.storage.dueKeys('hold:', Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    }
    await expectChargedOnce(10);
  });

  it('a release racing a settle of the same hold: either the charge or the release, never both, never neither', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await a.billing.reserve({ identity: alice, tokens: 100, requestId: `rel-${i}` });
      const [settled] = await Promise.allSettled([a.billing.settle(r, USAGE), b.billing.release(r, 'client left')]);
      if (settled.status === 'rejected') expect(settled.reason).toMatchObject({ appCode: 'CONFLICT' });
    }
    const entries = await a.storage.readLog<{ kind: string }>(`ledger:${alice.sub}`);
    const settles = entries.filter((e) => e.record.kind === 'settle').length;
    expect(settles + entries.filter((e) => e.record.kind === 'release').length).toBe(10);
    expect((await a.billing.balances(alice.sub)).subscription).toBe(1000 - settles * CHARGE);
    expect((await a.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});
