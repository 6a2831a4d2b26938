import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, makeRuntime, type OpenStore } from './__tests__/kit.js';
import type { Page } from './history.js';
import { ledgerKeys } from './Ledger.js';

/** Every page of a newest-first history from the top, and how many pages that took. */
async function allPages<T>(read: (cursor: number | undefined) => Promise<Page<T>>): Promise<{ items: T[]; pages: Array<Page<T>> }> {
  const pages: Array<Page<T>> = [];
  let cursor: number | undefined;
  do {
    const p = await read(cursor);
    pages.push(p);
    cursor = p.nextCursor;
  } while (cursor !== undefined);
  return { items: pages.flatMap((p) => p.items), pages };
}

describe.each(backends)('history paging on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('paging');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
    await rt.billing.credit({ userId: alice.sub, tokens: 10_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  async function platformCall(requestId: string, tokensUsed: number) {
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId });
    await rt.billing.settle(r, { tokensUsed, provider: 'openai', model: 'gpt-x' });
  }

  it('pages neither skip nor repeat a call while new calls are recorded between them', async () => {
    for (let i = 0; i < 10; i++) await platformCall(`old-${i}`, 10 + i);
    const seen: string[] = [];
    let cursor: number | undefined;
    let n = 0;
    do {
      const p = await rt.billing.usageHistory(alice.sub, { limit: 3, ...(cursor !== undefined ? { cursor } : {}) });
      seen.push(...p.items.map((u) => u.requestId!));
      cursor = p.nextCursor;
      // Calls (platform and BYOK) land between the pages: they are newer than every page still to come.
      await Promise.all([
        platformCall(`new-${n}`, 5),
        rt.billing.recordByokUsage({
          identity: alice,
          provider: 'anthropic',
          model: 'c',
          tokensUsed: 1,
          estimatedCostUsd: 0,
          requestId: `byok-${n}`,
        }),
      ]);
      n++;
    } while (cursor !== undefined);
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `old-${9 - i}`));
  });

  it('pages read on one instance while two instances record calls at once: no call skipped or repeated', async () => {
    const other = await makeRuntime(await store.another(), { billing: { platformFeeRate: 0.1 } });
    try {
      for (let i = 0; i < 12; i++) await platformCall(`pre-${i}`, 10);
      let stop = false;
      const writers = [rt, other].map(async (w, n) => {
        for (let i = 0; !stop; i++) {
          const requestId = `w${n}-${i}`;
          if (i % 2)
            await w.billing.recordByokUsage({
              identity: alice,
              provider: 'anthropic',
              model: 'c',
              tokensUsed: 1,
              estimatedCostUsd: 0,
              requestId,
            });
          else
            await w.billing.settle(await w.billing.reserve({ identity: alice, tokens: 100, requestId }), {
              tokensUsed: 5,
              provider: 'openai',
              model: 'gpt-x',
            });
        }
      });
      for (let round = 0; round < 4; round++) {
        const { items } = await allPages((cursor) => (round % 2 ? other : rt).billing.usageHistory(alice.sub, { limit: 3, cursor }));
        const ids = items.map((u) => u.requestId!);
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids.slice(-12)).toEqual(Array.from({ length: 12 }, (_, i) => `pre-${11 - i}`));
      }
      stop = true;
      await Promise.all(writers);
      const calls = (await rt.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle' || e.kind === 'byok_usage');
      const { items } = await allPages((cursor) => rt.billing.usageHistory(alice.sub, { limit: 7, cursor }));
      expect(items.map((u) => u.requestId)).toEqual(calls.map((e) => e.requestId).reverse());
    } finally {
      await other.close();
    }
  });

  it('the last page of a log that retention trimmed has no cursor to an empty page', async () => {
    for (let i = 0; i < 6; i++) await platformCall(`call-${i}`, 10 + i);
    for (let i = 0; i < 4; i++)
      await rt.billing.credit({ userId: alice.sub, tokens: 100, type: 'one_time', idempotencyKey: `top-${i}`, source: 'test' });
    // Retention dropped the two oldest calls and the seed credit plus the first top-up.
    await store.storage.trimLog(ledgerKeys.usage(alice.sub), 2);
    await store.storage.trimLog(ledgerKeys.purchases(alice.sub), 2);
    const usage = await allPages((cursor) => rt.billing.usageHistory(alice.sub, { limit: 2, cursor }));
    expect(usage.items.map((u) => u.requestId)).toEqual(['call-5', 'call-4', 'call-3', 'call-2']);
    expect(usage.pages.map((p) => p.items.length)).toEqual([2, 2]);
    const consumption = await allPages((cursor) => rt.billing.consumptionHistory(alice.sub, { limit: 4, cursor }));
    expect(consumption.pages.map((p) => p.items.length)).toEqual([4]);
    const purchases = await allPages((cursor) => rt.billing.purchaseHistory(alice.sub, { limit: 1, type: 'all', cursor }));
    expect(purchases.pages.map((p) => p.items.length)).toEqual([1, 1, 1]);
    // An untrimmed log whose length is a multiple of the limit ends the same way.
    const topups = await allPages((cursor) => rt.billing.purchaseHistory(alice.sub, { limit: 2, type: 'one_time', cursor }));
    expect(topups.pages.map((p) => p.items.length)).toEqual([2, 2]);
  });
});
