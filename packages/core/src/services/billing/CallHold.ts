import { CoreError } from '../../kernel/CoreError.js';
import type { Charge, Hold, MeteredUsage } from '../metering/Metering.js';
import type { Identity } from '../../kernel/identity.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Reservation, SettleResult, SettleUsage, ByokUsageParams } from './types.js';

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
export type HoldPayer = { mode: 'platform'; reservation: Reservation } | { mode: 'byok'; apiKey: string | undefined };

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
