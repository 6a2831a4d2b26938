import type { ProviderId } from '../../config/sections/ai.js';
import type { Identity } from '../../kernel/identity.js';

/**
 * The contract between the AI call engine and billing: one `hold` before the upstream call
 * (billing decides who pays and holds platform tokens), then `settle` or `release` on the
 * returned Hold, once. The billing service (`runtime.billing`) implements it; the AI service only
 * ever talks to this interface, so one metered call enters billing exactly twice (a route call its
 * deployments refused asks `storedKeyWouldPay` first: docs/ai.md#routes).
 */
export interface Metering {
  /**
   * Decide who pays for a call and hold what it may cost. In order: an API key's tokens per
   * minute; the request's own key (`ownKey`), else the user's consumption order (platform
   * balances, budgets, stored keys), else anonymous server-paid windows; for a platform-paid
   * call the API key's concurrency slot and the reservation; when the reservation is refused
   * for the user's budget, one more decision with the platform refused (the user's stored key,
   * where `byokAllowed` and `mayPay('byok')` allow, else that refusal).
   * Throws PAYMENT_REQUIRED when nothing can pay, FORBIDDEN when the payer chosen is not allowed,
   * BAD_REQUEST `provider_not_served` when the platform would pay for a provider it has no key for.
   */
  hold(req: HoldRequest): Promise<Hold>;
  /**
   * Whether `hold` would have a signed-in caller's call paid with their stored key for
   * `provider` (the consumption order's rule, read now, nothing held): asked only by a route
   * call its deployments' capacity refused (docs/ai.md#routes). Absent: never.
   */
  storedKeyWouldPay?(req: StoredKeyQuestion): Promise<boolean>;
}

/** A call `storedKeyWouldPay` is asked about. */
export interface StoredKeyQuestion {
  identity: Identity;
  provider: ProviderId;
  /** As in HoldRequest. */
  estimatedTokens: number;
}

export interface HoldRequest {
  identity: Identity | null;
  /** Client address (anonymous server-paid windows). */
  ip?: string;
  /** Unique per call; a replay of the reservation returns the same hold. */
  requestId: string;
  provider: ProviderId;
  /** Worst-case tokens of the call (input bound plus maxTokens), before the platform fee. */
  estimatedTokens: number;
  /** Worst-case cost in USD at the pricing table's prices, if the platform pays; absent when unpriced. */
  costUsd?: number;
  /** The request's own key: the call is BYOK, nothing is held. */
  ownKey?: string;
  /** Whether `provider` accepts callers' own keys (config ai.byokProviders). */
  byokAllowed: boolean;
  /** Whether the server has a key for `provider` and pays for it. */
  serverPays: boolean;
  /**
   * Other providers the call may be served by (a route's other targets that accept own keys,
   * docs/ai.md#routes): when no stored key of the caller pays for `provider`, one of theirs may
   * (the same consumption rule, in this order); the Hold's `keyProvider` then names it.
   */
  alsoByok?: readonly ProviderId[];
  /** The call's own rule on a payer (a server prompt never goes to an own key): throws to refuse it. */
  mayPay?: (mode: 'platform' | 'byok') => void;
}

/** What a hold decided, and the one way to close it. */
export interface Hold {
  readonly mode: 'platform' | 'byok';
  /** The caller's key (the request's or a stored one) for a BYOK call; undefined when the platform pays. */
  readonly apiKey: string | undefined;
  /** The provider of the stored key that pays, when billing chose one of the request's `alsoByok` over its `provider`. */
  readonly keyProvider?: ProviderId | undefined;
  /**
   * A money (USD) limit applies to this call: the user's budget or the API key's. Only a priced
   * model can be bounded by one, so the call may reach no unpriced target (callTargets).
   */
  readonly usdLimited: boolean;
  /**
   * Charge the real usage (plus fee) and give the rest back (platform), or record the usage
   * (BYOK; a lost record is logged, never thrown: the caller paid its provider).
   */
  settle(usage: MeteredUsage): Promise<Charge>;
  /** Give the whole hold back (the call failed or the client left). Never throws. */
  release(reason: string): Promise<void>;
}

export interface MeteredUsage {
  tokensUsed: number;
  provider: ProviderId;
  model: string;
  metadata?: UsageMetadata;
  /** What the call cost at the pricing table's prices; absent when the model has no price. */
  costUsd?: number;
}

/** What a closed hold reports to the caller: a platform charge or a BYOK usage record. */
export type Charge = { tokenUsage: SettledUsage } | { usageInfo: { tokensUsed: number; estimatedCostUsd: number } };

export interface SettledUsage {
  tokensUsed: number;
  tokensCharged: number;
  platformFee: number | null;
  remainingBalance: number | null;
}

/** The request's `metadata` (name, type), recorded with the usage entry. */
export type UsageMetadata = {
  name?: string;
  type?: string;
  /** Set by the response cache on a call it served (`ai.cache`), with the original call's tokens. */
  cache?: 'hit';
  cachedTokensUsed?: number;
};
