import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadAiSdk, loadProviderSdk } from '../../services/ai/aiSdk.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Storage } from '../../kernel/Storage.js';
import { alice, createAiHarness, rejection, type AiHarness } from './__tests__/aiHarness.js';

// Loading the AI SDK takes seconds on a busy machine: keep it out of the test timeouts.
beforeAll(() => Promise.all([loadAiSdk(), loadProviderSdk('openai')]), 60_000);

/**
 * The money side of a reservation that takes a while (a networked store): the upstream never
 * sees a request before the call's hold is stored, and a reservation the budget refuses or a
 * client that leaves meanwhile sends nothing and holds nothing. They pin the order of hold and
 * upstream request for any change that moves work around the reservation (docs/performance.md,
 * sixth session: building the request during the reservation was tried and reverted).
 */

/**
 * A store whose reservations (transactions that create a hold) take `delayMs` and report when
 * they start (`onReserving`) and when they are stored (`onStored`).
 */
function slowReservations(delayMs: number, onStored: () => void, onReserving: () => void = () => undefined): Storage {
  const inner = new MemoryStorage();
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'transact') return Reflect.get(target, prop, receiver);
      return async (keys: readonly string[], plan: Parameters<Storage['transact']>[1], opts?: unknown) => {
        const reserving = keys.some((k) => k.startsWith('hold:')) && !keys.some((k) => k.startsWith('usageday:'));
        if (!reserving) return (target.transact as (...a: unknown[]) => Promise<unknown>)(keys, plan, opts);
        onReserving();
        await new Promise((r) => setTimeout(r, delayMs));
        const result = await (target.transact as (...a: unknown[]) => Promise<unknown>)(keys, plan, opts);
        onStored();
        return result;
      };
    },
  }) as Storage;
}

let h: AiHarness;
afterEach(() => h.close());

const ask = (signal?: AbortSignal) =>
  h
    .caller(alice, signal)
    .ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai', options: { model: 'gpt-5-mini', maxTokens: 100 } });

describe('ai.generateText: the upstream request waits for the stored hold', () => {
  it('the upstream receives nothing before the reservation is stored, then exactly the one request, charged once', async () => {
    const seenWhenStored: number[] = [];
    h = await createAiHarness({}, {}, { storage: slowReservations(150, () => seenWhenStored.push(h.upstream.requests.length)) });
    await h.credit(alice.sub, 10_000);
    const out = await ask();
    expect(seenWhenStored).toEqual([0]);
    expect(h.upstream.requests).toHaveLength(1);
    expect(out.tokenUsage?.tokensCharged).toBeGreaterThan(0);
    expect(await h.balance(alice.sub)).toBe(10_000 - out.tokenUsage!.tokensCharged);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it('a reservation the budget refuses sends nothing upstream and holds nothing', async () => {
    h = await createAiHarness({}, {}, { storage: slowReservations(50, () => undefined) });
    await h.credit(alice.sub, 10_000);
    // The payer decision does not check the budget; the reservation's transaction does.
    await h.runtime.billing.budgets.set(alice.sub, 'daily', { tokens: 10 }, 'test');
    expect(await rejection(ask())).toMatchObject({ appCode: 'PAYMENT_REQUIRED', details: { reason: 'budget_exceeded', period: 'daily' } });
    expect(h.upstream.requests).toHaveLength(0);
    expect(await h.balance(alice.sub)).toBe(10_000);
    const view = await h.runtime.billing.budgets.view(alice.sub);
    expect(view.periods[0]!.reserved.tokens).toBe(0);
  });

  it('a client that leaves while the reservation is on its way: nothing sent, the hold given back', async () => {
    const ac = new AbortController();
    let stored = false;
    // The client leaves as the reservation starts: while it is on its way, whatever the machine's load.
    h = await createAiHarness(
      {},
      {},
      {
        storage: slowReservations(
          200,
          () => (stored = true),
          () => ac.abort(),
        ),
      },
    );
    await h.credit(alice.sub, 10_000);
    const call = rejection(ask(ac.signal));
    expect(await call).toMatchObject({ appCode: 'CANCELLED' });
    // The reservation lands after the client left; the failed call releases it.
    await vi.waitFor(() => expect(stored).toBe(true));
    await vi.waitFor(async () => {
      expect(await h.runtime.storage.keys('hold:')).toEqual([]);
      expect(await h.balance(alice.sub)).toBe(10_000);
    });
    expect(h.upstream.requests).toHaveLength(0);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});
