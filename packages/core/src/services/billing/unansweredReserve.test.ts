import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { dropTestSchema, holdStoreKeyLock, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { alice, makeRuntime } from './__tests__/kit.js';

const pg = await testPostgres();

/**
 * A reservation the store applied but did not answer (a hung Redis runs the script once it wakes;
 * the command had timed out): the call failed with 503 and never ran, so the hold is released as
 * soon as the store takes the release, not at its expiry (billing.md, "Storage outages").
 */
function applyingButUnanswered(inner: MemoryStorage): { storage: Storage; failNext: () => void } {
  let fail = false;
  const storage = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'transact')
        return async (keys: readonly string[], plan: never) => {
          const result = await target.transact(keys, plan);
          if (fail && keys.some((k) => k.startsWith('hold:'))) {
            fail = false;
            throw new CoreError('UNAVAILABLE', 'storage unavailable');
          }
          return result;
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as unknown as Storage;
  return { storage, failNext: () => (fail = true) };
}

describe('a reservation the store applied but did not answer', () => {
  let rt: Runtime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it.each(['reserve', 'hold'] as const)('is released by this process once the store answers again (%s)', async (how) => {
    const { storage, failNext } = applyingButUnanswered(new MemoryStorage());
    rt = await makeRuntime(storage, { billing: { platformFeeRate: 0.1 } });
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    failNext();
    const attempt =
      how === 'reserve'
        ? rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'lost-answer' })
        : rt.billing.hold({
            identity: alice,
            requestId: 'lost-answer',
            provider: 'openai',
            estimatedTokens: 100,
            byokAllowed: true,
            serverPays: true,
          });
    await expect(attempt).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    // The store applied it: held now, and given back by the queued release.
    await waitFor(async () => (await rt!.billing.balances(alice.sub)).subscription === 1000, { what: 'the unanswered hold released' });
    expect(await rt.billing.sweepExpiredReservations(Date.now() + 60 * 60_000)).toBe(0);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});

describe('a reservation the store runs only after the release was queued', () => {
  let rt: Runtime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it('finds its request id closed and holds nothing', async () => {
    const inner = new MemoryStorage();
    let late: (() => Promise<unknown>) | undefined;
    // The reservation's transaction is not answered and not applied yet: kept, to be run later.
    const storage = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'transact')
          return async (...args: Parameters<Storage['transact']>) => {
            const keys = args[0];
            const store = target as Storage;
            if (!late && keys.some((k) => k.startsWith('hold:')) && !keys.some((k) => k.startsWith('usageday:'))) {
              late = () => store.transact(...args);
              throw new CoreError('UNAVAILABLE', 'storage unavailable');
            }
            return store.transact(...args);
          };
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as unknown as Storage;
    rt = await makeRuntime(storage, { billing: { platformFeeRate: 0.1 } });
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const hold = rt.billing.hold({
      identity: alice,
      requestId: 'late',
      provider: 'openai',
      estimatedTokens: 100,
      byokAllowed: true,
      serverPays: true,
    });
    await expect(hold).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    await waitFor(() => rt!.billing.pendingCloses() === 0, { what: 'the queued release done' });
    // Now the store gets to the reservation.
    await late!();
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 1000, one_time: 0 });
    expect(await inner.keys('hold:')).toEqual([]);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});

/**
 * On PostgreSQL a reservation that timed out is not over: its statement waits on the server (here
 * for the account's lock, held by another session) and commits when it gets the lock. The release
 * this process queues must not conclude "nothing held" before then: it ran first (a plan that found
 * no hold wrote nothing and so waited for no lock), and the hold, committed after, held the user's
 * tokens for a call answered 503 until the hold's expiry.
 */
describe.skipIf(!pg.ok)('a reservation PostgreSQL runs after its client gave up', () => {
  let rt: Runtime | undefined;
  let storage: PostgresStorage | undefined;
  const opts = testPostgresOptions(pg, 'unanswered');
  afterEach(async () => {
    await rt?.close();
    await storage?.close();
    await dropTestSchema(pg, opts.schema);
  });

  it('holds nothing once the store is back: the queued release closes it', async () => {
    // The hold times out only because the lock is held (until it has), whatever the timeout: a
    // short one (it was 300 ms) bounded every other query too, the schema's set-up and the credit,
    // and a loaded host failed those instead.
    storage = await PostgresStorage.connect({ ...opts, queryTimeoutMs: 2000 });
    rt = await makeRuntime(storage, { billing: { platformFeeRate: 0.1 } });
    const user = `${alice.sub}-${opts.schema}`;
    await rt.billing.credit({ userId: user, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const lock = await holdStoreKeyLock(pg, `acct:${encodeURIComponent(user)}`);
    try {
      const hold = rt.billing.hold({
        identity: { ...alice, sub: user },
        requestId: 'timed-out',
        provider: 'openai',
        estimatedTokens: 100,
        byokAllowed: true,
        serverPays: true,
      });
      await expect(hold).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
      // The queued release gets its turn while the reservation still waits for the lock: done (it
      // wrote without the lock) or waiting for the lock beside the reservation. A fixed sleep
      // (600 ms) let a slow host release the lock before the release ran, and the test then
      // passed whatever the release did.
      await waitFor(async () => rt!.billing.pendingCloses() === 0 || (await lock.waiting()) >= 2, {
        what: 'the queued release run while the lock is held',
      });
    } finally {
      await lock.release();
    }
    await waitFor(() => rt!.billing.pendingCloses() === 0, { what: 'the queued release done' });
    // The reservation's statement has had the lock by now: whatever it did, nothing stays held.
    await waitFor(async () => (await rt!.billing.balances(user)).subscription === 1000 && (await storage!.keys('hold:')).length === 0, {
      what: 'no tokens held for the refused call',
    });
    expect(await rt.billing.sweepExpiredReservations(Date.now() + 60 * 60_000)).toBe(0);
    expect((await rt.billing.ledger.audit(user)).consistent).toBe(true);
  });
});
