import { describe, expect, it } from 'vitest';
import type { BudgetRefusal } from '../spend/periodSpend.js';
import { planConsumption, type PlanInput } from './planConsumption.js';
import { DEFAULT_PREFERENCES } from './PreferencesStore.js';

const refusal: BudgetRefusal = {
  period: 'daily',
  periodId: '2026-11-23',
  metric: 'tokens',
  limit: 1000,
  spent: 900,
  reserved: 50,
  requested: 100,
  resetsAt: '2026-11-24T00:00:00.000Z',
  reason: 'budget_exceeded',
};
const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  prefs: { ...DEFAULT_PREFERENCES, byokEnabled: true },
  balances: { subscription: 10_000, one_time: 0 },
  needed: 110,
  hasApiKey: false,
  byokKeys: ['openai'],
  provider: 'openai',
  ...over,
});

describe('planConsumption under a budget', () => {
  it('within the budget: the platform pays, budget null', () => {
    expect(planConsumption(input({ budget: null }))).toMatchObject({
      payer: 'platform',
      viable: true,
      fallback: false,
      platformRefusedBy: null,
      budget: null,
    });
  });

  it('a refusing budget sends the call to a usable stored key (a fallback for the budget)', () => {
    const plan = planConsumption(input({ budget: refusal }));
    expect(plan).toMatchObject({
      payer: 'byok',
      viable: true,
      fallback: true,
      platformRefusedBy: 'budget',
      budget: refusal,
      remainingAfter: { subscription: 10_000 },
    });
    expect(plan.notifications[0]).toContain('daily budget of 1000 tokens');
  });

  it('without a usable stored key the budget refuses: no key for the provider, BYOK off, a provider switched off, byok not in the order', () => {
    const cases: Array<Partial<PlanInput>> = [
      { byokKeys: ['anthropic'] },
      { prefs: { ...DEFAULT_PREFERENCES, byokEnabled: false } },
      { prefs: { ...DEFAULT_PREFERENCES, byokEnabled: true, byokProviders: { openai: { enabled: false } } } },
      { prefs: { ...DEFAULT_PREFERENCES, byokEnabled: true, consumptionOrder: ['subscription', 'one_time'] } },
    ];
    for (const c of cases) {
      expect(planConsumption(input({ ...c, budget: refusal }))).toMatchObject({
        payer: 'none',
        viable: false,
        platformRefusedBy: 'budget',
        budget: refusal,
        plan: [],
      });
    }
  });

  it('the budget does not touch calls the platform does not pay: an own key in the request, or byok first in the order', () => {
    expect(planConsumption(input({ hasApiKey: true, budget: refusal }))).toMatchObject({
      payer: 'byok',
      fallback: false,
      platformRefusedBy: null,
    });
    const first = planConsumption(
      input({ prefs: { ...DEFAULT_PREFERENCES, byokEnabled: true, consumptionOrder: ['byok', 'subscription'] }, budget: refusal }),
    );
    expect(first).toMatchObject({ payer: 'byok', fallback: false, platformRefusedBy: null });
  });

  it('balances short: the balance rule applies first, as before', () => {
    expect(planConsumption(input({ balances: { subscription: 10, one_time: 0 }, budget: refusal }))).toMatchObject({
      payer: 'byok',
      fallback: true,
      platformRefusedBy: 'balance',
    });
    expect(planConsumption(input({ balances: { subscription: 10, one_time: 0 }, byokKeys: [], budget: null }))).toMatchObject({
      payer: 'none',
      platformRefusedBy: 'balance',
    });
  });
});
