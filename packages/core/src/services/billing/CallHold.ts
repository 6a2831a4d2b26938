import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import type { Logger } from '../../kernel/Logger.js';
import type { KeyLimits, TokenReservation } from '../apiKeys/KeyLimits.js';
import type { Charge, Hold, HoldRequest, MeteredUsage } from '../metering/Metering.js';
import type {
  ByokUsageParams,
  Decision,
  DecidedHold,
  DecideAndReserveParams,
  DecideParams,
  Reservation,
  ReserveParams,
  SettleResult,
  SettleUsage,
} from './types.js';

/** Billing's steps a hold is made of. */
export interface HoldBilling extends HoldLedger {
  decide(p: DecideParams): Promise<Decision>;
  reserve(p: ReserveParams): Promise<Reservation>;
  /** decide and reserve of a signed-in user's call in one storage transaction. */
  decideAndReserve(p: DecideAndReserveParams): Promise<DecidedHold>;
}

/** The details of a PAYMENT_REQUIRED that `reserve` threw because of the user's budget, else undefined. */
export function budgetRefusalOf(err: unknown): object | undefined {
  if (!(err instanceof CoreError) || err.appCode !== 'PAYMENT_REQUIRED') return undefined;
  const d = err.details as { reason?: unknown; period?: unknown } | undefined;
  return d && typeof d.period === 'string' && (d.reason === 'budget_exceeded' || d.reason === 'model_not_priced') ? d : undefined;
}

const byokNotAllowed = (provider: string) =>
  new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, {
    details: { reason: 'byok_not_allowed', provider },
  });

function allows(req: HoldRequest, mode: 'platform' | 'byok'): boolean {
  try {
    req.mayPay?.(mode);
    return true;
  } catch {
    return false;
  }
}

/**
 * The payer decision of one metered call, in one place (see Metering.hold): who pays, the
 * API key's limits, the reservation, and the one re-decision when the budget refuses it.
 */
export async function openHold(billing: HoldBilling, limits: KeyLimits | undefined, logger: Logger, req: HoldRequest): Promise<Hold> {
  if (req.ownKey !== undefined && !req.byokAllowed) throw byokNotAllowed(req.provider);
  const grant = req.identity?.apiKey;
  // An API key's tokens per minute hold the call's worst case before anything is read; the hold
  // settles to what the call used, or is given back when the call ends without an answer.
  const tokens = grant && limits ? await limits.reserveTokens(grant, req.estimatedTokens) : undefined;
  try {
    return await openPaid(billing, limits, logger, req, tokens);
  } catch (err) {
    await tokens?.release();
    throw err;
  }
}

/** Who pays, the key's concurrency slot and the reservation, with the key's tokens already held. */
async function openPaid(
  billing: HoldBilling,
  limits: KeyLimits | undefined,
  logger: Logger,
  req: HoldRequest,
  tokens: TokenReservation | undefined,
): Promise<Hold> {
  const { identity, provider, estimatedTokens, requestId } = req;
  const grant = identity?.apiKey;
  const ip = req.ip ? { ip: req.ip } : {};
  const byok = (apiKey: string, keyProvider?: string): Hold => {
    req.mayPay?.('byok');
    return new CallHold(
      billing,
      logger,
      { mode: 'byok', apiKey, ...(keyProvider !== undefined ? { keyProvider } : {}) },
      { identity, requestId },
      tokens ? { release: () => tokens.release(), count: (t) => tokens.settle(t) } : undefined,
    );
  };
  if (req.ownKey !== undefined) return byok(req.ownKey);
  // A signed-in user's call is decided and held in one transaction (one store round trip), unless
  // its API key has a concurrency limit: that slot is taken between the decision and the hold,
  // and only by a platform-paid call, so such a call keeps the two steps.
  if (identity && !(grant?.concurrent && limits)) {
    let decided: DecidedHold;
    try {
      decided = await billing.decideAndReserve({
        identity,
        provider,
        tokens: estimatedTokens,
        requestId,
        platformAllowed: req.serverPays && allows(req, 'platform'),
        ...(req.alsoByok ? { alsoByok: req.alsoByok } : {}),
        ...(req.costUsd !== undefined ? { costUsd: req.costUsd } : {}),
      });
    } catch (err) {
      return byokAfterBudget(billing, req, err, byok);
    }
    if (decided.mode === 'byok') {
      // A key for one of the call's `alsoByok` providers: the caller named them as accepting own keys.
      if (!req.byokAllowed && !decided.keyProvider) throw byokNotAllowed(provider);
      return byok(decided.apiKey, decided.keyProvider);
    }
    if (!decided.reservation) {
      // The platform was chosen and may not pay: the same refusals as below, nothing held.
      refusePlatform(req);
      throw new CoreError('INTERNAL', 'billing held nothing for a platform-paid call');
    }
    const slot: KeySlot | undefined = tokens ? { release: () => tokens.release(), count: (t) => tokens.settle(t) } : undefined;
    return new CallHold(billing, logger, { mode: 'platform', reservation: decided.reservation }, { identity, requestId }, slot);
  }
  const also = req.alsoByok ? { alsoByok: req.alsoByok } : {};
  const decision = await billing.decide({ identity, provider, estimatedTokens, apiKeyProvided: false, ...ip, ...also });
  if (decision.mode === 'byok') {
    if (!decision.apiKey) throw new CoreError('INTERNAL', 'billing chose a stored key but returned none');
    if (!req.byokAllowed && !decision.keyProvider) throw byokNotAllowed(provider);
    return byok(decision.apiKey, decision.keyProvider);
  }
  refusePlatform(req);
  let giveBack: (() => Promise<void>) | undefined;
  try {
    if (grant && limits) giveBack = await limits.acquire(grant);
    const reservation = await billing.reserve({
      identity,
      tokens: estimatedTokens,
      requestId,
      decision,
      ...ip,
      ...(req.costUsd !== undefined ? { costUsd: req.costUsd } : {}),
    });
    // CallHold settles (counts) before it releases, so the tokens are given back only by a call
    // that ended without settling.
    const slot: KeySlot | undefined =
      giveBack || tokens
        ? { release: async () => (await giveBack?.(), await tokens?.release()), count: (t) => tokens?.settle(t) ?? Promise.resolve() }
        : undefined;
    return new CallHold(billing, logger, { mode: 'platform', reservation }, { identity, requestId }, slot);
  } catch (err) {
    // The concurrency slot only: the tokens stay held if the caller's stored key takes the call below.
    await giveBack?.();
    return byokAfterBudget(billing, req, err, byok);
  }
}

/** Throws when the platform may not pay for this call; before anything is held. */
function refusePlatform(req: HoldRequest): void {
  if (!req.serverPays) {
    throw new CoreError('BAD_REQUEST', `this server does not pay for provider ${req.provider}; send your own apiKey`, {
      details: { reason: 'provider_not_served', provider: req.provider },
    });
  }
  // A server prompt never goes to a caller's own account (and vice versa).
  req.mayPay?.('platform');
}

/**
 * The budget is enforced in the reservation's transaction (so concurrent calls cannot overspend
 * it); when it refuses (`err`), decide once more with the platform refused: the caller's stored
 * key where their order allows it (not platform spend), else `err` is thrown.
 */
async function byokAfterBudget(
  billing: HoldBilling,
  req: HoldRequest,
  err: unknown,
  byok: (apiKey: string, keyProvider?: string) => Hold,
): Promise<Hold> {
  const budgetRefusal = budgetRefusalOf(err);
  if (!budgetRefusal || !req.byokAllowed || !allows(req, 'byok')) throw err;
  const { identity, provider, estimatedTokens } = req;
  const again = await billing.decide({
    identity,
    provider,
    estimatedTokens,
    apiKeyProvided: false,
    budgetRefusal,
    ...(req.ip ? { ip: req.ip } : {}),
    ...(req.alsoByok ? { alsoByok: req.alsoByok } : {}),
  });
  if (again.mode !== 'byok' || !again.apiKey) throw err;
  return byok(again.apiKey, again.keyProvider);
}

/** What a hold closes through: billing's own settle, release and BYOK record. */
export interface HoldLedger {
  settle(reservation: Reservation, usage: SettleUsage): Promise<SettleResult>;
  release(reservation: Reservation, reason: string): Promise<void>;
  recordByokUsage(p: ByokUsageParams): Promise<void>;
  /** Push a running call's hold expiry back (absent: holds are not renewed). */
  renew?(reservation: Reservation): Promise<void>;
  /** How often `renew` runs while the call is open. */
  readonly renewEveryMs?: number;
}

/** An API key's concurrency slot and token counter, held with a call (KeyLimits). */
export interface KeySlot {
  /** Give the concurrent-call slot and any tokens still held back (no-op without them). */
  release(): Promise<void>;
  /** Settle the key's tokens per minute to what the call used. */
  count(tokens: number): Promise<void>;
}

const NO_SLOT: KeySlot = { release: async () => undefined, count: async () => undefined };

/**
 * Who pays one call: the platform, against a reservation in the ledger; or the caller's own key
 * (BYOK: the request's or a stored one), with nothing reserved. Chosen once by openHold.
 */
export type HoldPayer =
  | { mode: 'platform'; reservation: Reservation }
  | { mode: 'byok'; apiKey: string | undefined; keyProvider?: string | undefined };

/**
 * One call's hold, closed exactly once: `settle` charges (platform) or records (BYOK) the real
 * usage, `release` gives a platform hold back. Whichever comes first wins; later closes do nothing
 * (a stream may end in several ways at once: the client leaves while the upstream fails).
 */
export class CallHold implements Hold {
  private closed = false;
  /** Renews a platform hold while the call runs, so a call longer than the hold TTL is never swept under it. */
  private readonly renewal: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly ledger: HoldLedger,
    private readonly logger: Logger,
    private readonly payer: HoldPayer,
    private readonly call: { identity: Identity | null; requestId: string },
    private readonly slot: KeySlot = NO_SLOT,
  ) {
    const { renew, renewEveryMs } = ledger;
    if (payer.mode === 'platform' && renew && renewEveryMs) {
      const reservation = payer.reservation;
      this.renewal = setInterval(() => {
        renew
          .call(ledger, reservation)
          .catch((err: unknown) =>
            logger.warn('billing: renewing a running call’s hold failed', { requestId: call.requestId, error: String(err) }),
          );
      }, renewEveryMs).unref();
    }
  }

  /** Closed: settle or release from here on, no more renewals. */
  private close(): void {
    this.closed = true;
    if (this.renewal) clearInterval(this.renewal);
  }

  get mode(): HoldPayer['mode'] {
    return this.payer.mode;
  }

  get apiKey(): string | undefined {
    return this.payer.mode === 'byok' ? this.payer.apiKey : undefined;
  }

  get keyProvider(): string | undefined {
    return this.payer.mode === 'byok' ? this.payer.keyProvider : undefined;
  }

  get usdLimited(): boolean {
    return this.payer.mode === 'platform' && this.payer.reservation.usdLimited === true;
  }

  async settle(usage: MeteredUsage): Promise<Charge> {
    const estimatedCostUsd = usage.costUsd ?? 0;
    if (this.closed) throw new CoreError('INTERNAL', 'this hold is already closed');
    this.close();
    const { identity, requestId } = this.call;
    if (this.payer.mode === 'platform') {
      const { reservation } = this.payer;
      try {
        const tokenUsage = await this.ledger.settle(reservation, {
          tokensUsed: usage.tokensUsed,
          provider: usage.provider,
          model: usage.model,
          metadata: usage.metadata ?? {},
          ...(usage.costUsd !== undefined ? { costUsd: usage.costUsd } : {}),
        });
        await this.slot.count(tokenUsage.tokensUsed).catch(() => undefined);
        return { tokenUsage };
      } finally {
        await this.slot.release();
      }
    }
    try {
      await this.ledger.recordByokUsage({
        identity,
        provider: usage.provider,
        model: usage.model,
        tokensUsed: usage.tokensUsed,
        estimatedCostUsd,
        metadata: usage.metadata ?? {},
        requestId,
      });
      await this.slot.count(usage.tokensUsed).catch(() => undefined);
    } catch (err) {
      // The caller paid its provider directly; a lost usage record must not cost it the answer.
      this.logger.warn('billing: recording BYOK usage failed', { requestId, error: err instanceof Error ? err.message : String(err) });
    }
    return { usageInfo: { tokensUsed: usage.tokensUsed, estimatedCostUsd } };
  }

  async release(reason: string): Promise<void> {
    if (this.closed) return;
    this.close();
    const { requestId } = this.call;
    if (this.payer.mode === 'byok') {
      // A BYOK call: nothing held in billing, but the key's tokens per minute are.
      await this.slot.release();
      return;
    }
    try {
      await this.ledger.release(this.payer.reservation, reason);
    } catch (err) {
      // Billing sweeps holds that are never closed; the call's own outcome stands.
      this.logger.error('billing: releasing a reservation failed', {
        requestId,
        reason,
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      await this.slot.release();
    }
  }
}
