import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { CoreError } from '../../kernel/CoreError.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { alice, makeRuntime } from './__tests__/kit.js';

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
