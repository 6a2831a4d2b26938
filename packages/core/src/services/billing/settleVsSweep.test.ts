import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { dropTestSchema, holdStoreKeyLock, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, makeRuntime } from './__tests__/kit.js';

const pg = await testPostgres();
const USAGE = { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' };

/**
 * An instance's settle and another instance's expiry sweep of the same hold, forced to meet on
 * PostgreSQL: both wait on the user's account lock (held by a third session), then run. Whichever the
 * store runs first, the call is charged exactly once: the settle wins (the release finds the call
 * closed and does nothing), or the release gives the hold back and the settle after it charges
 * the whole call (`late`). Never a refund after a charge, a second release or a second charge.
 */
describe.skipIf(!pg.ok)('a settle and another instance’s sweep of the same hold, on PostgreSQL', () => {
  const opts = testPostgresOptions(pg, 'settle-vs-sweep');
  const opened: Array<{ rt: Runtime; storage: PostgresStorage }> = [];
  afterEach(async () => {
    for (const { rt, storage } of opened.splice(0)) {
      await rt.close();
      await storage.close();
    }
    await dropTestSchema(pg, opts.schema);
  });

  async function instance(): Promise<Runtime> {
    const storage = await PostgresStorage.connect(opts);
    // A long TTL: the runtime's own sweeper stays out; the test sweeps past the expiry itself.
    const rt = await makeRuntime(storage, { billing: { platformFeeRate: 0.1, reservationTtlMs: 60_000 } });
    opened.push({ rt, storage });
    return rt;
  }

  for (const first of ['settle', 'sweep'] as const) {
    it(`charges the call once when the ${first} gets the lock first`, async () => {
      const a = await instance();
      const b = await instance();
      const user = `${alice.sub}-${first}`;
      const identity = { ...alice, sub: user };
      await a.billing.credit({ userId: user, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
      const r = await a.billing.reserve({ identity, tokens: 100, requestId: `race-${first}` });
      // The account's lock: both transactions take it first (keys are locked in byte order), so both queue on it.
      const lock = await holdStoreKeyLock(pg, `acct:${encodeURIComponent(user)}`);
      let settle: Promise<unknown>;
      let sweep: Promise<number>;
      try {
        const start = {
          settle: () => (settle = a.billing.settle(r, USAGE)),
          sweep: () => (sweep = b.billing.sweepExpiredReservations(Date.now() + 120_000)),
        };
        start[first]();
        await waitFor(async () => (await lock.waiting()) === 1, { what: `the ${first} waiting for the lock` });
        start[first === 'settle' ? 'sweep' : 'settle']();
        await waitFor(async () => (await lock.waiting()) === 2, { what: 'both waiting for the lock' });
      } finally {
        await lock.release();
      }
      const [settled, released] = await Promise.all([settle!, sweep!]);
      expect(settled).toMatchObject({ tokensUsed: 50, tokensCharged: 55 });
      expect(released).toBe(first === 'sweep' ? 1 : 0);
      expect((await a.billing.balances(user)).subscription).toBe(945);
      const entries = (await a.billing.ledger.entries(user)).map((e) => e.kind);
      expect(entries.filter((k) => k === 'settle')).toHaveLength(1);
      expect(entries.filter((k) => k === 'release')).toHaveLength(first === 'sweep' ? 1 : 0);
      expect((await a.billing.ledger.audit(user)).consistent).toBe(true);
      // Nothing left for a later round, nor a second charge on a replay.
      expect(await b.billing.sweepExpiredReservations(Date.now() + 120_000)).toBe(0);
      expect(await a.billing.settle(r, USAGE)).toEqual(settled);
      expect((await a.billing.balances(user)).subscription).toBe(945);
    });
  }
});
