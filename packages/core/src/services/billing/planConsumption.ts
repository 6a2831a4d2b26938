import type { Balances } from './Ledger.js';
import type { UserPreferences } from './PreferencesStore.js';
import { BALANCE_TYPES, type BalanceType, type ConsumptionSource } from './types.js';

export interface PlanStep {
  source: ConsumptionSource;
  tokensToConsume: number;
  reason: string;
}

/** Which balance or key would pay for a call, and what would remain. */
export interface ConsumptionPlan {
  /** Tokens a server-paid call would hold: estimate plus platform fee. */
  totalTokensNeeded: number;
  payer: 'platform' | 'byok' | 'none';
  /** BYOK was chosen after platform balances earlier in the order fell short. */
  fallback: boolean;
  plan: PlanStep[];
  viable: boolean;
  balances: Balances;
  remainingAfter: Balances;
  notifications: string[];
  prefs: UserPreferences;
}

export interface PlanInput {
  prefs: UserPreferences;
  balances: Balances;
  needed: number;
  hasApiKey: boolean;
  /** Providers the user has a stored key for. */
  byokKeys: string[];
  /** The provider of the call; when absent any enabled stored key counts. */
  provider?: string | undefined;
}

function byokUsable(i: PlanInput): boolean {
  if (!i.prefs.byokEnabled) return false;
  const candidates = i.provider ? i.byokKeys.filter((p) => p === i.provider) : i.byokKeys;
  return candidates.some((p) => i.prefs.byokProviders[p]?.enabled !== false);
}

/**
 * Walk the user's consumptionOrder: platform balances add up until they cover the need;
 * 'byok' pays when reached and usable (enabled, a stored key for the provider). Pure: the same
 * rule decides `decide()` and the billing.planConsumption preview.
 */
export function planConsumption(i: PlanInput): ConsumptionPlan {
  const base = { totalTokensNeeded: i.needed, balances: i.balances, prefs: i.prefs };
  const byok = (fallback: boolean, reason: string): ConsumptionPlan => ({
    ...base,
    payer: 'byok',
    fallback,
    plan: [{ source: 'byok', tokensToConsume: 0, reason }],
    viable: true,
    remainingAfter: { ...i.balances },
    notifications: fallback ? ['platform tokens are not enough: this call would use your own API key'] : [],
  });
  if (i.hasApiKey) return byok(false, 'the request carries its own API key');

  const listed = i.prefs.consumptionOrder;
  const order: ConsumptionSource[] = [...listed, ...BALANCE_TYPES.filter((t) => !listed.includes(t))];
  const steps: PlanStep[] = [];
  const remainingAfter = { ...i.balances };
  let covered = 0;
  let platformBefore = false;
  for (const source of order) {
    if (source === 'byok') {
      if (byokUsable(i)) return byok(platformBefore, platformBefore ? 'platform tokens are not enough; falling back to your stored key' : 'your stored key is first in your consumption order');
      continue;
    }
    platformBefore = true;
    const take = Math.min(i.balances[source as BalanceType], i.needed - covered);
    if (take > 0) {
      steps.push({ source, tokensToConsume: take, reason: `${source} tokens` });
      remainingAfter[source as BalanceType] -= take;
      covered += take;
    }
    if (covered >= i.needed) {
      const notifications: string[] = [];
      if (i.balances.one_time > 0 && remainingAfter.one_time === 0) notifications.push('your one-time tokens would be used up');
      const after = remainingAfter.subscription + remainingAfter.one_time;
      if (after < i.prefs.notifyTokenLowThreshold) notifications.push(`your balance would fall below ${i.prefs.notifyTokenLowThreshold} tokens`);
      return { ...base, payer: 'platform', fallback: false, plan: steps, viable: true, remainingAfter, notifications };
    }
  }
  return {
    ...base,
    payer: 'none',
    fallback: false,
    plan: steps,
    viable: false,
    remainingAfter: { ...i.balances },
    notifications: ['insufficient tokens and no usable API key'],
  };
}
