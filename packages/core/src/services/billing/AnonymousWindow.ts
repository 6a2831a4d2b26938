import { CoreError } from '../../kernel/CoreError.js';
import type { Storage } from '../../kernel/Storage.js';
import { platformFee } from './fee.js';
import type { Reservation, SettleResult, SettleUsage } from './types.js';

export interface AnonymousWindowOptions {
  /** Tokens (fee included) one address may spend per window. */
  tokensPerWindow: number;
  windowMs: number;
}

type AnonRecord = { state: 'held' | 'closed'; reservation: Reservation; result?: SettleResult };

/**
 * Server-paid budget for anonymous callers, per client address and fixed window. The counter
 * counts down from 0 and may not pass -tokensPerWindow, so the atomic `increment(min)` of the
 * storage enforces the limit across server instances.
 */
export class AnonymousWindow {
  constructor(
    private readonly storage: Storage,
    private readonly opts: AnonymousWindowOptions,
  ) {}

  private window(ip: string, now: number) {
    const index = Math.floor(now / this.opts.windowMs);
    return { key: `anon:${encodeURIComponent(ip)}:${index}`, endsAt: (index + 1) * this.opts.windowMs };
  }

  private recordKey(requestId: string) {
    return `aresv:${encodeURIComponent(requestId)}`;
  }

  /** Tokens this address may still spend in the current window. */
  async remaining(ip: string): Promise<number> {
    const used = -((await this.storage.get<number>(this.window(ip, Date.now()).key)) ?? 0);
    return Math.max(0, this.opts.tokensPerWindow - used);
  }

  async reserve(ip: string, tokens: number, requestId: string): Promise<Reservation> {
    const now = Date.now();
    const { key, endsAt } = this.window(ip, now);
    const left = await this.storage.increment(key, -tokens, { min: -this.opts.tokensPerWindow, ttlMs: this.opts.windowMs });
    if (left === null) {
      const retryAfter = Math.max(1, Math.ceil((endsAt - now) / 1000));
      throw new CoreError('RATE_LIMITED', 'anonymous token budget for this window is used up; sign in or provide an API key', {
        details: { retryAfterSec: retryAfter },
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    const reservation: Reservation = {
      requestId,
      userId: null,
      anonKey: key,
      tokens,
      draws: [],
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(endsAt).toISOString(),
    };
    await this.storage.set<AnonRecord>(this.recordKey(requestId), { state: 'held', reservation }, { ttlMs: this.opts.windowMs * 2 });
    return reservation;
  }

  /** Close a hold once: charge usage plus fee (settle) or nothing (release). */
  async close(reservation: Reservation, usage: SettleUsage | null, feeRate: number): Promise<SettleResult | null> {
    const rk = this.recordKey(reservation.requestId);
    const held = await this.storage.get<AnonRecord>(rk);
    if (!held) throw new CoreError('NOT_FOUND', 'unknown reservation');
    if (held.state === 'closed') return held.result ?? null;
    const used = usage ? Math.max(0, Math.ceil(usage.tokensUsed)) : 0;
    const fee = platformFee(used, feeRate);
    const result: SettleResult | undefined = usage
      ? { tokensUsed: used, tokensCharged: used + fee, platformFee: fee, remainingBalance: null }
      : undefined;
    const closed: AnonRecord = { state: 'closed', reservation: held.reservation, ...(result ? { result } : {}) };
    if (!(await this.storage.compareAndSet<AnonRecord>(rk, held, closed, { ttlMs: this.opts.windowMs * 2 }))) {
      throw new CoreError('CONFLICT', 'this reservation is being settled or released concurrently');
    }
    // Give back what was not used; an overrun is counted against the window without a floor.
    const back = held.reservation.tokens - (result?.tokensCharged ?? 0);
    if (back !== 0) await this.storage.increment(held.reservation.anonKey!, back, { ttlMs: this.opts.windowMs });
    return result ?? null;
  }
}
