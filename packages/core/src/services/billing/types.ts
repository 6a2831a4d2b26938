import type { KeyHold } from '../apiKeys/keySpend.js';
import type { TxWrite } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';
import type { BudgetCrossing, BudgetHold, BudgetRefusal } from '../spend/periodSpend.js';

/** Platform token balances. BYOK is not a balance: it is the user's own key. */
export const BALANCE_TYPES = ['subscription', 'one_time'] as const;
export type BalanceType = (typeof BALANCE_TYPES)[number];

/** A step of the consumption order: a platform balance or the user's own key. */
export type ConsumptionSource = BalanceType | 'byok';
export const DEFAULT_CONSUMPTION_ORDER: readonly ConsumptionSource[] = ['subscription', 'one_time', 'byok'];

/** One balance movement. The sum of a user's lines per type equals that balance. */
export interface LedgerLine {
  type: BalanceType;
  /** Integer tokens; negative draws, positive credits and refunds. */
  delta: number;
}

export type LedgerEntryKind =
  /** Tokens added (purchase webhook, admin credit, library credit). */
  | 'credit'
  /** Tokens held before an upstream call: lines are negative. */
  | 'reserve'
  /** The call ended: lines give back what the charge did not use (or draw an overage). */
  | 'settle'
  /** The call failed or was abandoned: lines give back the whole hold. */
  | 'release'
  /** A BYOK call: no lines, usage only. */
  | 'byok_usage';

export interface UsageRecord {
  tokensUsed: number;
  /** Tokens actually taken from balances for this call (usage plus fee, as far as balances allowed). */
  tokensCharged: number;
  platformFee: number;
  /** usage + fee that no balance could cover (only when a call overran its reservation). */
  uncollected?: number;
  /**
   * What the call cost in USD at the pricing table's prices (platform-paid: what the platform
   * pays the provider; BYOK: what the user's own key paid). 0 when the model has no price.
   */
  estimatedCostUsd?: number;
  provider: string;
  model: string;
  metadata?: Record<string, unknown>;
}

/** An append-only ledger entry (`ledger:<userId>`). */
export interface LedgerEntry {
  id: string;
  kind: LedgerEntryKind;
  /** Replaying an operation with this key changes nothing. */
  idempotencyKey: string;
  /** ISO time. */
  at: string;
  lines: LedgerLine[];
  /** credit: where the tokens came from ('admin', 'webhook', 'api', ...). */
  source?: string;
  /** reserve / settle / release: the request the tokens were held for. */
  requestId?: string;
  usage?: UsageRecord;
  /** Extra client-safe facts (purchase reference, release reason). */
  note?: Record<string, unknown>;
}

/** Tokens held for one upstream call. Returned by reserve, passed back to settle or release. */
export interface Reservation {
  requestId: string;
  /** null for an anonymous (server-paid) call. */
  userId: string | null;
  /** Anonymous calls: the window counter the tokens came from. */
  anonKey?: string;
  /** Total held, platform fee included. */
  tokens: number;
  /** What each balance gave, in draw order. */
  draws: Array<{ type: BalanceType; amount: number }>;
  /** What this call added to its day's and month's reserved budget figures. */
  budget?: BudgetHold;
  /** A call made with an API key: what it added to the key's reserved figures (docs/api-keys.md). */
  apiKey?: KeyHold;
  /** A money limit (the user's budget or the API key's) applied when this was reserved: the call may reach only priced models. */
  usdLimited?: true;
  createdAt: string;
  expiresAt: string;
}

export interface DecideParams {
  identity: Identity | null;
  provider: string;
  /** Tokens the call may use (input estimate plus maxTokens), before the platform fee. */
  estimatedTokens: number;
  /** The request carries its own key. */
  apiKeyProvided: boolean;
  /** Client address; used for anonymous server-paid windows. */
  ip?: string;
  /**
   * The details of the PAYMENT_REQUIRED the reservation threw for the budget (a BudgetRefusal):
   * decide again with the platform refused (the user's stored key, or that refusal).
   */
  budgetRefusal?: object;
  /** Other providers a stored key may pay this call with when none pays for `provider` (HoldRequest.alsoByok). */
  alsoByok?: readonly string[];
}

/** `keyProvider`: the provider of the stored key that pays, when it is one of `alsoByok`. */
export type Decision = { mode: 'byok'; apiKey?: string; keyProvider?: string } | { mode: 'platform' };

/** BillingService.decideAndReserve: a signed-in user's call, decided and held in one transaction. */
export interface DecideAndReserveParams {
  identity: Identity;
  provider: string;
  /** Tokens the call may use (input bound plus maxTokens), before the platform fee. */
  tokens: number;
  requestId: string;
  /** Worst-case cost in USD at the pricing table's prices; absent when the model has no price. */
  costUsd?: number;
  /** The platform may pay for this call (the server has a key for the provider, and the call's own rule allows it). */
  platformAllowed: boolean;
  /** Other providers a stored key may pay this call with when none pays for `provider` (HoldRequest.alsoByok). */
  alsoByok?: readonly string[];
}

/**
 * What decideAndReserve answered: the platform holding `reservation`; a stored key paying; or the
 * platform chosen without a reservation (`platformAllowed` was false: nothing held).
 */
export type DecidedHold = { mode: 'platform'; reservation?: Reservation } | { mode: 'byok'; apiKey: string; keyProvider?: string };

export interface ReserveParams {
  identity: Identity | null;
  /** Tokens the call may use, before the platform fee; the fee is added here. */
  tokens: number;
  /** Unique per call; replaying it returns the same reservation. */
  requestId: string;
  ip?: string;
  /** What `decide` returned for this call: its preferences read is reused instead of repeated. */
  decision?: Decision;
  /** Worst-case cost in USD at the pricing table's prices; absent when the model has no price. */
  costUsd?: number;
}

export interface SettleUsage {
  tokensUsed: number;
  provider: string;
  model: string;
  /** What the call cost in USD at the pricing table's prices; absent when the model has no price (recorded as 0). */
  costUsd?: number;
  metadata?: Record<string, unknown>;
}

export interface SettleResult {
  tokensUsed: number;
  tokensCharged: number;
  platformFee: number;
  /** Platform balance left (all types); null for anonymous calls. */
  remainingBalance: number | null;
}

export interface ByokUsageParams {
  identity: Identity | null;
  provider: string;
  model: string;
  tokensUsed: number;
  estimatedCostUsd: number;
  metadata?: Record<string, unknown>;
  requestId?: string;
}

export interface CreditParams {
  userId: string;
  tokens: number;
  type: BalanceType;
  idempotencyKey: string;
  /** Where the tokens came from: 'admin', 'webhook', 'api' or your own label. */
  source: string;
  note?: Record<string, unknown>;
}

export interface CreditResult {
  /** False when the idempotency key had already been applied (nothing changed). */
  applied: boolean;
  entryId: string;
  balance: number;
}

/** What an operator can subscribe to on `runtime.billing.events`. */
export interface BillingEventMap {
  /** The user's platform balance fell below their threshold. */
  tokenLow: [{ userId: string; balance: number; threshold: number }];
  /** A call went to the user's own key because platform tokens ran out ('balance') or the budget refused it ('budget'). */
  fallbackToByok: [{ userId: string; provider: string; estimatedTokens: number; reason: 'balance' | 'budget' }];
  /** The user's one-time tokens reached zero. */
  oneTimeConsumed: [{ userId: string }];
  /** A settled call took the user's period spend to a soft threshold (once per user, period, limit and threshold). */
  budgetThreshold: [{ userId: string } & BudgetCrossing];
  /** A call was refused because its worst case would break the user's budget. */
  budgetExceeded: [{ userId: string } & BudgetRefusal];
}

/**
 * Where billing records budget alerts: as writes of the transaction that caused them (the
 * governance AlertOutbox implements it), so the charge and its alert commit together.
 */
export interface BudgetAlertSink {
  writesFor(event: 'budgetThreshold' | 'budgetExceeded', data: Record<string, unknown>, id: string): TxWrite[];
  /** Deliver soon what was just committed. */
  kick(): void;
}

export interface PurchaseItem {
  id: string;
  at: string;
  type: BalanceType;
  tokens: number;
  source: string;
  note?: Record<string, unknown>;
}
