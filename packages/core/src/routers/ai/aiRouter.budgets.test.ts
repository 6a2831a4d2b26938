import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadAiSdk } from '../../services/ai/aiSdk.js';
import type { LedgerEntry } from '../../services/billing/types.js';
import { alice, createAiHarness, rejection, type AiHarness } from './__tests__/aiHarness.js';

// Loading the AI SDK takes seconds on a busy machine: keep it out of the test timeouts.
beforeAll(() => loadAiSdk(), 60_000);

let h: AiHarness;
afterEach(() => h.close());

const ask = (over: Record<string, unknown> = {}) =>
  h
    .caller(alice)
    .ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai', options: { model: 'gpt-5-mini', maxTokens: 1000 }, ...over });

describe('ai.generateText under a money budget', () => {
  it('records the call cost at the pricing table on the settle entry, the history and the budget', async () => {
    h = await createAiHarness({}, { outputTokens: 100 });
    await h.credit(alice.sub, 100_000);
    await h.runtime.billing.budgets.set(alice.sub, 'daily', { usd: 1 }, 'test');
    const r = await ask();
    const used = r.tokenUsage!.tokensUsed;
    const settle = (await h.runtime.billing.ledger.entries(alice.sub)).find((e: LedgerEntry) => e.kind === 'settle')!;
    const input = used - 100;
    // gpt-5-mini: 0.25 USD per million input tokens, 2 per million output tokens (bundled pricing).
    const cost = (input * 0.25 + 100 * 2) / 1e6;
    expect(settle.usage!.estimatedCostUsd).toBeCloseTo(cost, 12);
    const history = await h.runtime.billing.usageHistory(alice.sub, { limit: 5 });
    expect(history.items[0]!.estimatedCostUsd).toBe(settle.usage!.estimatedCostUsd);
    const budget = await h.runtime.billing.budgets.view(alice.sub);
    // Counted in nano-dollars (periodSpend.ts): the cost exactly, to the nano-dollar.
    expect(budget.periods[0]!.spent.usd).toBeCloseTo(cost, 9);
    expect(budget.periods[0]!.reserved.usd).toBe(0);
  });

  it('holds the worst case at the dearest fallback price: a budget the model fits is refused when a dearer fallback could answer', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 100_000);
    // Worst case: about 0.002 USD at gpt-5-mini, about 0.075 USD at claude-opus-4-1.
    await h.runtime.billing.budgets.set(alice.sub, 'monthly', { usd: 0.01 }, 'test');
    await expect(ask()).resolves.toHaveProperty('tokenUsage');
    const err = await rejection(ask({ fallbacks: ['anthropic/claude-opus-4-1'] }));
    expect(err).toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
      details: { reason: 'budget_exceeded', metric: 'usd', period: 'monthly', limit: 0.01 },
    });
    expect(err.details!.requested as number).toBeGreaterThan(0.07);
    // An unpriced model has no bound: refused under a money limit, not run.
    const before = h.upstream.requests.length;
    expect(await rejection(ask({ options: { model: 'unlisted-local-model', maxTokens: 10 } }))).toMatchObject({
      details: { reason: 'model_not_priced' },
    });
    expect(h.upstream.requests.length).toBe(before);
  });
});
