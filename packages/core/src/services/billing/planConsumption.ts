import type { Balances } from './Ledger.js';
import type { BudgetRefusal } from '../spend/periodSpend.js';
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
  /** BYOK was chosen after the platform could not pay: balances earlier in the order fell short, or the budget refuses. */
  fallback: boolean;
  /** Why the platform could not pay when `fallback` (or `payer` is 'none'); null otherwise. */
  platformRefusedBy: 'balance' | 'budget' | null;
  /**
   * The refusal the user's budget gives a platform-paid call of this size now (periodSpend's
   * budgetRefusal, the rule the reservation enforces), or null when the budget allows it.
   */
  budget: BudgetRefusal | null;
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
  /** What the user's budget says to a platform-paid call of this size (budgetRefusal); null or absent: allowed. */
  budget?: BudgetRefusal | null | undefined;
}

function budgetMessage(r: BudgetRefusal): string {
  if (r.reason === 'model_not_priced') return `your ${r.period} budget is in USD and this model has no price: its cost cannot be bounded`;
  return `this call would exceed your ${r.period} budget of ${r.metric === 'usd' ? `${r.limit} USD` : `${r.limit} tokens`} (resets ${r.resetsAt})`;
}

function byokUsable(i: PlanInput): boolean {
  if (!i.prefs.byokEnabled) return false;
  const candidates = i.provider ? i.byokKeys.filter((p) => p === i.provider) : i.byokKeys;
  return candidates.some((p) => i.prefs.byokProviders[p]?.enabled !== false);
}

/**
 * Walk the user's consumptionOrder: platform balances add up until they cover the need;
 * 'byok' pays when reached and usable (enabled, a stored key for the provider). When the
 * balances cover the call but the budget refuses it, a usable stored key listed anywhere in the
 * order pays instead (the budget limits platform spend; the user's key is not platform spend),
 * else the call is refused with the budget's figures. Pure: the same rule decides `decide()`
 * and the billing.planConsumption / user.checkRequestEligibility previews.
 */
export function planConsumption(i: PlanInput): ConsumptionPlan {
  const budget = i.budget ?? null;
  const base = { totalTokensNeeded: i.needed, balances: i.balances, prefs: i.prefs, budget };
  const byok = (platformRefusedBy: 'balance' | 'budget' | null, reason: string): ConsumptionPlan => ({
    ...base,
    payer: 'byok',
    fallback: platformRefusedBy !== null,
    platformRefusedBy,
    plan: [{ source: 'byok', tokensToConsume: 0, reason }],
    viable: true,
    remainingAfter: { ...i.balances },
    notifications:
      platformRefusedBy === 'balance'
        ? ['platform tokens are not enough: this call would use your own API key']
        : platformRefusedBy === 'budget'
          ? [`${budgetMessage(budget!)}: this call would use your own API key`]
          : [],
  });
  if (i.hasApiKey) return byok(null, 'the request carries its own API key');

  const listed = i.prefs.consumptionOrder;
  const order: ConsumptionSource[] = [...listed, ...BALANCE_TYPES.filter((t) => !listed.includes(t))];
  const steps: PlanStep[] = [];
  const remainingAfter = { ...i.balances };
  let covered = 0;
  let platformBefore = false;
  for (const source of order) {
    if (source === 'byok') {
      if (byokUsable(i))
        return byok(
          platformBefore ? 'balance' : null,
          platformBefore
            ? 'platform tokens are not enough; falling back to your stored key'
            : 'your stored key is first in your consumption order',
        );
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
      if (budget) {
        if (listed.includes('byok') && byokUsable(i))
          return byok('budget', 'your budget refuses platform-paid calls now; falling back to your stored key');
        return {
          ...base,
          payer: 'none',
          fallback: false,
          platformRefusedBy: 'budget',
          plan: [],
          viable: false,
          remainingAfter: { ...i.balances },
          notifications: [budgetMessage(budget)],
        };
      }
      const notifications: string[] = [];
      if (i.balances.one_time > 0 && remainingAfter.one_time === 0) notifications.push('your one-time tokens would be used up');
      const after = remainingAfter.subscription + remainingAfter.one_time;
      if (after < i.prefs.notifyTokenLowThreshold)
        notifications.push(`your balance would fall below ${i.prefs.notifyTokenLowThreshold} tokens`);
      return {
        ...base,
        payer: 'platform',
        fallback: false,
        platformRefusedBy: null,
        plan: steps,
        viable: true,
        remainingAfter,
        notifications,
      };
    }
  }
  return {
    ...base,
    payer: 'none',
    fallback: false,
    platformRefusedBy: 'balance',
    plan: steps,
    viable: false,
    remainingAfter: { ...i.balances },
    notifications: ['insufficient platform tokens and no usable provider API key'],
  };
}
