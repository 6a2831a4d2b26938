import type { BudgetPeriod } from '../../config/sections/budget.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { TxRead, TxWrite } from '../../kernel/Storage.js';
import { fromNanos, periodIds, periodNow, resetsAt, toNanos, type PeriodSpend, type Worst } from '../spend/periodSpend.js';
import { apiKeyKeys, KEY_BUDGET_PERIODS, type ApiKeyRecord, type KeyBudget, type KeyBudgetPeriod } from './apiKeyTypes.js';

/** A budget period as an adjective, for refusals ("this API key's daily token budget"). */
const PERIOD_WORD: Record<KeyBudgetPeriod, string> = { day: 'daily', month: 'monthly', total: 'total' };
/** The owner's budget period a key's period runs with (its id, its reset); `total` has none. */
const CALENDAR: Record<KeyBudgetPeriod, BudgetPeriod | undefined> = { day: 'daily', month: 'monthly', total: undefined };

/**
 * Per-key spend and budgets, run inside billing's reserve / settle / release transactions (the
 * same all-or-nothing write as the owner's balance), so concurrent calls through one key can
 * never spend more than its budget affords. Same arithmetic as the owner's budget (periodSpend):
 * integer nano-dollars, a call counts in the periods it was reserved in.
 */
export const keySpendKey = (id: string) => `apikeyspend:${id}`;
/** Kept a year after the last change (the total period lives as long as the key's spend is read). */
const SPEND_TTL_MS = 400 * 86_400_000;

/**
 * A period's figures: `tokens` / `usdNanos` are what platform-paid calls spent (what a budget
 * counts); `byokTokens` what calls paid with the owner's own provider key used (reported, never
 * budgeted).
 */
type KeyPeriod = Omit<PeriodSpend, 'alerted'> & { byokTokens?: number };
/** `apikeyspend:<id>`: the key's day, month and lifetime figures, plus its call count (every call, whoever paid). */
export interface KeySpendRecord {
  day?: KeyPeriod;
  month?: KeyPeriod;
  total?: KeyPeriod;
  calls?: number;
}
/** What a reservation added to the key's reserved figures (kept on the reservation). */
export interface KeyHold {
  keyId: string;
  day: string;
  month: string;
  tokens: number;
  usdNanos: number;
}

const fresh = (id: string): KeyPeriod => ({ id, tokens: 0, usdNanos: 0, reservedTokens: 0, reservedUsdNanos: 0 });

function idsAt(at: Date): Record<KeyBudgetPeriod, string> {
  const p = periodIds(at);
  return { day: p.daily, month: p.monthly, total: 'total' };
}

function current(stored: KeySpendRecord | undefined, at: Date): Record<KeyBudgetPeriod, KeyPeriod> & { calls: number } {
  const ids = idsAt(at);
  const out = { calls: stored?.calls ?? 0 } as Record<KeyBudgetPeriod, KeyPeriod> & { calls: number };
  for (const p of KEY_BUDGET_PERIODS) {
    // Never back to an earlier period (a clock set back), nor stuck in one a clock far ahead wrote.
    const id = periodNow(stored?.[p]?.id, ids[p], CALENDAR[p]);
    out[p] = stored?.[p]?.id === id ? { ...stored[p]! } : fresh(id);
  }
  return out;
}

const resetOf = (p: KeyBudgetPeriod, id: string) => {
  const calendar = CALENDAR[p];
  return calendar ? resetsAt(calendar, id) : null;
};

/** The first of the key's limits a call's worst case would break, as the PAYMENT_REQUIRED to throw; null when it fits. */
function refusal(spend: Record<KeyBudgetPeriod, KeyPeriod>, budget: KeyBudget, worst: Worst): CoreError | null {
  for (const period of KEY_BUDGET_PERIODS) {
    const limits = budget[period];
    if (!limits) continue;
    const s = spend[period];
    const base = { reason: 'key_budget_exceeded', period, periodId: s.id, resetsAt: resetOf(period, s.id) };
    if (limits.tokens !== undefined && s.tokens + s.reservedTokens + worst.tokens > limits.tokens) {
      return new CoreError(
        'PAYMENT_REQUIRED',
        `this API key's ${PERIOD_WORD[period]} token budget (${limits.tokens}) does not cover this call`,
        {
          details: {
            ...base,
            metric: 'tokens',
            limit: limits.tokens,
            spent: s.tokens,
            reserved: s.reservedTokens,
            requested: worst.tokens,
          },
        },
      );
    }
    if (limits.usd !== undefined && (worst.usdNanos === null || s.usdNanos + s.reservedUsdNanos + worst.usdNanos > toNanos(limits.usd))) {
      const unpriced = worst.usdNanos === null;
      return new CoreError(
        'PAYMENT_REQUIRED',
        unpriced
          ? 'this API key has a money budget and the model has no price'
          : `this API key's ${PERIOD_WORD[period]} money budget ($${limits.usd}) does not cover this call`,
        {
          details: {
            ...base,
            reason: unpriced ? 'key_model_not_priced' : 'key_budget_exceeded',
            metric: 'usd',
            limit: limits.usd,
            spent: fromNanos(s.usdNanos),
            reserved: fromNanos(s.reservedUsdNanos),
            requested: unpriced ? null : fromNanos(worst.usdNanos!),
          },
        },
      );
    }
  }
  return null;
}

/** The keys the reservation transaction must also read for a call through `keyId`. */
export const keySpendTxKeys = (keyId: string) => [apiKeyKeys.record(keyId), keySpendKey(keyId)];

/**
 * Inside the reservation's transaction: add the call's worst case to the key's reserved figures,
 * or throw the key's PAYMENT_REQUIRED (the transaction then writes nothing). A key revoked or
 * expired since the request was authenticated is refused here too.
 */
export function reserveKeySpend(
  read: TxRead,
  keyId: string,
  worst: Worst,
  at: Date,
): { writes: TxWrite[]; hold: KeyHold; usdLimited: boolean } {
  const record = read<ApiKeyRecord>(apiKeyKeys.record(keyId));
  if (!record || record.revokedAt || (record.expiresAt && Date.parse(record.expiresAt) <= at.getTime()))
    throw new CoreError('INVALID_TOKEN', 'API key revoked or expired');
  const spend = current(read<KeySpendRecord>(keySpendKey(keyId)), at);
  const refused = refusal(spend, record.budget ?? {}, worst);
  if (refused) throw refused;
  const usd = worst.usdNanos ?? 0;
  for (const p of KEY_BUDGET_PERIODS) {
    spend[p].reservedTokens += worst.tokens;
    spend[p].reservedUsdNanos += usd;
  }
  const budget = record.budget ?? {};
  const usdLimited = KEY_BUDGET_PERIODS.some((p) => budget[p]?.usd !== undefined);
  return {
    writes: [{ op: 'set', key: keySpendKey(keyId), value: spend, ttlMs: SPEND_TTL_MS }],
    hold: { keyId, day: spend.day.id, month: spend.month.id, tokens: worst.tokens, usdNanos: usd },
    usdLimited,
  };
}

function unhold(spend: Record<KeyBudgetPeriod, KeyPeriod>, hold: KeyHold): void {
  for (const p of KEY_BUDGET_PERIODS) {
    if (p !== 'total' && spend[p].id !== hold[p]) continue;
    spend[p].reservedTokens = Math.max(0, spend[p].reservedTokens - hold.tokens);
    spend[p].reservedUsdNanos = Math.max(0, spend[p].reservedUsdNanos - hold.usdNanos);
  }
}

/** Inside settle's transaction: replace the hold with what the call used (tokens before the fee, provider cost). */
export function settleKeySpend(read: TxRead, hold: KeyHold, actual: { tokens: number; usdNanos: number }, at: Date): TxWrite[] {
  const spend = current(read<KeySpendRecord>(keySpendKey(hold.keyId)), at);
  unhold(spend, hold);
  for (const p of KEY_BUDGET_PERIODS) {
    if (p !== 'total' && spend[p].id !== hold[p]) continue; // that period has ended: closed, not charged
    spend[p].tokens += actual.tokens;
    spend[p].usdNanos += actual.usdNanos;
  }
  spend.calls += 1;
  return [{ op: 'set', key: keySpendKey(hold.keyId), value: spend, ttlMs: SPEND_TTL_MS }];
}

/**
 * Inside a BYOK call's usage record (recordByokUsage): the call counts as one of the key's calls
 * and its tokens as the key's BYOK tokens, in the periods it ends in; no budget figure moves.
 */
export function recordKeyByok(read: TxRead, keyId: string, tokens: number, at: Date): TxWrite[] {
  const spend = current(read<KeySpendRecord>(keySpendKey(keyId)), at);
  for (const p of KEY_BUDGET_PERIODS) spend[p].byokTokens = (spend[p].byokTokens ?? 0) + tokens;
  spend.calls += 1;
  return [{ op: 'set', key: keySpendKey(keyId), value: spend, ttlMs: SPEND_TTL_MS }];
}

/** Inside release's transaction: give the hold back. */
export function releaseKeySpend(read: TxRead, hold: KeyHold, at: Date): TxWrite[] {
  const spend = current(read<KeySpendRecord>(keySpendKey(hold.keyId)), at);
  unhold(spend, hold);
  return [{ op: 'set', key: keySpendKey(hold.keyId), value: spend, ttlMs: SPEND_TTL_MS }];
}

/** A key's spend as keys.get shows it: per period, limits, spent, reserved, remaining. */
export interface KeyUsageView {
  calls: number;
  periods: Array<{
    period: KeyBudgetPeriod;
    periodId: string;
    limits: { tokens: number | null; usd: number | null };
    /** Platform-paid spend (`tokens`, `usd`: what the budget counts) and tokens used on the owner's own provider keys (`byokTokens`). */
    spent: { tokens: number; usd: number; byokTokens: number };
    reserved: { tokens: number; usd: number };
    remaining: { tokens: number | null; usd: number | null };
    resetsAt: string | null;
  }>;
}

export function keyUsageView(stored: KeySpendRecord | undefined, budget: KeyBudget | undefined, now = new Date()): KeyUsageView {
  const spend = current(stored, now);
  return {
    calls: spend.calls,
    periods: KEY_BUDGET_PERIODS.map((period) => {
      const s = spend[period];
      const tokens = budget?.[period]?.tokens ?? null;
      const usd = budget?.[period]?.usd ?? null;
      return {
        period,
        periodId: s.id,
        limits: { tokens, usd },
        spent: { tokens: s.tokens, usd: fromNanos(s.usdNanos), byokTokens: s.byokTokens ?? 0 },
        reserved: { tokens: s.reservedTokens, usd: fromNanos(s.reservedUsdNanos) },
        remaining: {
          tokens: tokens === null ? null : Math.max(0, tokens - s.tokens - s.reservedTokens),
          usd: usd === null ? null : Math.max(0, fromNanos(toNanos(usd) - s.usdNanos - s.reservedUsdNanos)),
        },
        resetsAt: resetOf(period, s.id),
      };
    }),
  };
}
