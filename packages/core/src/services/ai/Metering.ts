import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';

/**
 * The contract between ai.generateText and billing: which key pays for a call, and the
 * reserve → settle | release cycle of platform-paid calls. The billing service
 * (`runtime.billing`) implements it; the AI service only ever talks to this interface.
 */
export interface Metering {
  /**
   * Decide how a call is paid, before any upstream request.
   * - `apiKeyProvided`: the request carries its own key → `{ mode: 'byok' }` (no apiKey returned).
   * - the user enabled BYOK for `provider` and a key is stored → `{ mode: 'byok', apiKey }` (decrypted).
   * - otherwise `{ mode: 'platform' }` when the caller can be charged platform tokens
   *   (anonymous callers only when config.billing.allowAnonymousServerPaid).
   * Throws CoreError PAYMENT_REQUIRED when neither tokens nor a key can pay.
   * `ip` is the client address (anonymous server-paid windows).
   * `budgetRefusal`: `reserve` refused the platform-paid call for the user's budget (its error's
   * details, see budgetRefusalOf): decide again with the platform refused, so the call goes to
   * the user's stored key where their consumption order allows it, else throws that refusal.
   */
  decide(args: { identity: Identity | null; provider: ProviderId; estimatedTokens: number; apiKeyProvided: boolean; ip?: string; budgetRefusal?: object }): Promise<MeteringDecision>;

  /**
   * Atomically reserve `tokens` (plus the platform fee, computed by billing). Throws PAYMENT_REQUIRED
   * (also when the call's worst case would break the user's budget).
   * `decision`: what `decide` returned for this call, so billing can reuse what it already read.
   * `costUsd`: the call's worst-case cost at the pricing table's prices (absent when unpriced).
   */
  reserve(args: { identity: Identity | null; tokens: number; requestId: string; ip?: string; decision?: MeteringDecision; costUsd?: number }): Promise<Reservation>;

  /**
   * Charge the real usage (plus fee) against a reservation and return the rest. `costUsd`: what
   * the call cost the platform at the pricing table's prices (absent when the model has no price).
   */
  settle(reservation: Reservation, usage: { tokensUsed: number; provider: ProviderId; model: string; metadata?: UsageMetadata; costUsd?: number }): Promise<SettledUsage>;

  /** Refund a reservation in full (the call failed or the client went away). */
  release(reservation: Reservation, reason: string): Promise<void>;

  /** Record a BYOK call (nothing is charged). */
  recordByokUsage(args: {
    identity: Identity | null;
    provider: ProviderId;
    model: string;
    tokensUsed: number;
    estimatedCostUsd: number;
    metadata?: UsageMetadata;
    requestId?: string;
  }): Promise<void>;
}

export type MeteringDecision = { mode: 'byok'; apiKey?: string } | { mode: 'platform' };

/** A reservation is opaque to the AI service: it only hands it back to settle or release. */
export type Reservation = object;

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
};

/** The details of a PAYMENT_REQUIRED that `reserve` threw because of the user's budget, else undefined. */
export function budgetRefusalOf(err: unknown): object | undefined {
  if (!(err instanceof CoreError) || err.appCode !== 'PAYMENT_REQUIRED') return undefined;
  const d = err.details as { reason?: unknown; period?: unknown } | undefined;
  return d && typeof d.period === 'string' && (d.reason === 'budget_exceeded' || d.reason === 'model_not_priced') ? d : undefined;
}
