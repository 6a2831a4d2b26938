import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';
import type { Reservation } from './types.js';

const CALLS = 200;
const TOKENS = 100; // per call, before the 10% fee: each reservation holds 110
const HOLD = 110;
const AFFORDABLE = 50;

describe.each(backends)('concurrent reservations on $name', (backend) => {
  let store: OpenStore;
  const runtimes: Runtime[] = [];
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('billing-conc');
  });
  afterEach(async () => {
    // On memory every runtime shares one store: close it once.
    for (const rt of backend.name === 'memory' ? runtimes.slice(0, 1) : runtimes) await rt.close();
    runtimes.length = 0;
    await store.cleanup();
  });

  async function run(instances: number) {
    runtimes.push(await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } }));
    for (let i = 1; i < instances; i++) runtimes.push(await makeRuntime(await store.another(), { billing: { platformFeeRate: 0.1 } }));
    const start = AFFORDABLE * HOLD + HOLD / 2; // covers 50 calls, not 51
    await runtimes[0]!.billing.credit({ userId: alice.sub, tokens: start, type: 'subscription', idempotencyKey: 'seed', source: 'test' });

    // Watch the balance while the calls run: it must never be seen below zero.
    let minSeen = Infinity;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        minSeen = Math.min(minSeen, (await runtimes[0]!.billing.balances(alice.sub)).subscription);
        await new Promise((r) => setImmediate(r));
      }
    })();

    const results = await Promise.allSettled(
      Array.from({ length: CALLS }, (_, i) =>
        runtimes[i % instances]!.billing.reserve({ identity: alice, tokens: TOKENS, requestId: `c-${i}` }),
      ),
    );
    const held = results.filter((r): r is PromiseFulfilledResult<Reservation> => r.status === 'fulfilled').map((r) => r.value);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(held).toHaveLength(AFFORDABLE);
    expect(refused.every((r) => (r.reason as { appCode?: string }).appCode === 'PAYMENT_REQUIRED')).toBe(true);
    expect((await runtimes[0]!.billing.balances(alice.sub)).subscription).toBe(start - AFFORDABLE * HOLD);

    // Settle them all concurrently on alternating instances: each call used its estimate.
    const settled = await Promise.all(
      held.map((r, i) => runtimes[i % instances]!.billing.settle(r, { tokensUsed: TOKENS, provider: 'openai', model: 'm' })),
    );
    watching = false;
    await watcher;
    expect(settled.every((s) => s.tokensCharged === HOLD)).toBe(true);
    expect(minSeen).toBeGreaterThanOrEqual(0);

    const audit = await runtimes[0]!.billing.ledger.audit(alice.sub);
    expect(audit).toMatchObject({ consistent: true, balances: { subscription: start - AFFORDABLE * HOLD, one_time: 0 } });
    const entries = await runtimes[0]!.billing.ledger.entries(alice.sub);
    expect(entries.filter((e) => e.kind === 'reserve')).toHaveLength(AFFORDABLE);
    expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(AFFORDABLE);
  }

  it(`${CALLS} concurrent reserve calls on a balance covering ${AFFORDABLE}: exactly ${AFFORDABLE} succeed, ledger sums to the balance`, async () => {
    await run(1);
  });

  it('the same with two server instances sharing the store (on redis: two connections)', async () => {
    await run(2);
  });

  it('concurrent credits with one idempotency key apply once', async () => {
    runtimes.push(await makeRuntime(store.storage));
    const rt = runtimes[0]!;
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'one_time', idempotencyKey: 'same', source: 'test' }),
      ),
    );
    const applied = results.filter((r) => r.status === 'fulfilled' && r.value.applied);
    expect(applied).toHaveLength(1);
    // The rest either replayed or were told the first is still in progress.
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ appCode: 'CONFLICT' });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true, balances: { one_time: 1000 } });
  });
});
