import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Storage } from '../../kernel/Storage.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { adminUsageAnalytics } from './adminUsageAnalytics.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';

const DAY = '2026-03-14';
const NEXT = '2026-03-15';
const BEFORE_MIDNIGHT = Date.parse(`${DAY}T23:59:59.900Z`);
const AFTER_MIDNIGHT = Date.parse(`${NEXT}T00:00:00.050Z`);

/**
 * The same store, whose next transaction (once armed) starts just after midnight: as a settle
 * asked for at 23:59:59.9 whose transaction waits behind the user's other calls or a round trip.
 * Only `Date` is faked; the drivers' timers are real.
 */
function midnightStore(inner: Storage): { storage: Storage; arm(): void } {
  let armed = false;
  const storage = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'transact')
        return (...args: Parameters<Storage['transact']>) => {
          if (armed) {
            armed = false;
            vi.setSystemTime(AFTER_MIDNIGHT);
          }
          return target.transact(...args);
        };
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { storage, arm: () => (armed = true) };
}

describe.each(backends)('a call recorded across midnight on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  let arm: () => void;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(BEFORE_MIDNIGHT);
    store = await backend.open('midnight');
    const m = midnightStore(store.storage);
    arm = m.arm;
    rt = await makeRuntime(m.storage, { billing: { platformFeeRate: 0.1 } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
    vi.useRealTimers();
  });

  it('has its ledger entry, history item and day rows on one UTC day', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 100_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 500, requestId: 'late-evening' });
    arm();
    await rt.billing.settle(r, { tokensUsed: 200, provider: 'openai', model: 'gpt-x', costUsd: 0.01 });
    vi.setSystemTime(BEFORE_MIDNIGHT);
    arm();
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'anthropic',
      model: 'c',
      tokensUsed: 7,
      estimatedCostUsd: 0.5,
      requestId: 'byok',
    });
    vi.setSystemTime(AFTER_MIDNIGHT);

    const calls = (await rt.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle' || e.kind === 'byok_usage');
    const { items } = await rt.billing.usageHistory(alice.sub, { limit: 10 });
    const a = await rt.billing.usageAnalytics(alice.sub, { days: 2, includeHistory: true, historyLimit: 10 });
    const cluster = await adminUsageAnalytics(store.storage, { from: DAY, to: NEXT, groupBy: 'day', sortBy: 'cost', limit: 10 });
    // Both calls were asked for before midnight and are counted on that day, everywhere.
    expect(calls.map((e) => e.at.slice(0, 10))).toEqual([DAY, DAY]);
    expect(items.map((u) => u.at.slice(0, 10))).toEqual([DAY, DAY]);
    expect(a.byDay.map((d) => [d.date, d.requests])).toEqual([[DAY, 2]]);
    expect(a.history?.map((u) => u.at.slice(0, 10))).toEqual([DAY, DAY]);
    expect(cluster.byDay?.map((d) => [d.date, d.requests])).toEqual([[DAY, 2]]);
  });
});
