import { CoreError } from '../../errors/CoreError.js';
import type { Logger } from '../../runtime/Logger.js';
import { platformFee } from './fee.js';
import type { Ledger } from './Ledger.js';
import { BALANCE_TYPES, type BalanceType, type LedgerEntry, type Reservation, type SettleResult, type SettleUsage } from './types.js';

/**
 * Lifecycle records of one reservation. While the call runs the record sits at
 * `resv:<user>:<requestId>` ('pending' → 'held' → 'closing'); when it ends it moves to
 * `resvdone:<user>:<requestId>` ('settled' | 'released', kept a week for replays), so the expiry
 * sweep only ever reads open holds. Like ledger claims, records are written before the ledger
 * append and carry the entries, so `reconcile` can repair a log that missed an append.
 */
export type ReservationRecord = OpenRecord | FinishedRecord;
export type OpenRecord = { state: 'pending'; at: string } | { state: 'held' | 'closing'; at: string; reservation: Reservation; entries: LedgerEntry[] };
export type FinishedRecord =
  | { state: 'released'; at: string; reservation: Reservation; entries: LedgerEntry[] }
  | { state: 'settled'; at: string; reservation: Reservation; entries: LedgerEntry[]; result: SettleResult };
type HeldRecord = Extract<OpenRecord, { state: 'held' | 'closing' }>;

const enc = encodeURIComponent;
export const RESERVATION_PREFIX = 'resv:';
export const FINISHED_PREFIX = 'resvdone:';
export const reservationKey = (userId: string, requestId: string) => `${RESERVATION_PREFIX}${enc(userId)}:${enc(requestId)}`;
export const finishedKey = (userId: string, requestId: string) => `${FINISHED_PREFIX}${enc(userId)}:${enc(requestId)}`;
const FINISHED_TTL_MS = 7 * 24 * 3600_000;
/** Retries when a partial draw loses a race with another call on the same balance. */
const DRAW_ATTEMPTS = 8;

export type Draw = { type: BalanceType; amount: number };

/** Platform-token holds for authenticated users: reserve before a call, settle or release after. */
export class Reservations {
  /**
   * The held record this process wrote, by the reservation object it returned: settle and
   * release compare-and-set it to 'closing' straight away instead of reading it first. Any
   * other reservation object (a replay, another instance) takes the read path.
   */
  private readonly heldByThisProcess = new WeakMap<Reservation, HeldRecord>();

  constructor(
    private readonly ledger: Ledger,
    private readonly logger: Logger,
    private readonly ttlMs: number,
  ) {}

  private get storage() {
    return this.ledger.storage;
  }

  /**
   * Take up to `tokens` from the balances in `order`, never below zero. Each step is one atomic
   * increment; when a balance holds less than needed, what it has is taken (re-read on a lost race).
   */
  async drawUpTo(userId: string, tokens: number, order: readonly BalanceType[]): Promise<Draw[]> {
    let remaining = tokens;
    const draws: Draw[] = [];
    for (const type of order) {
      if (remaining === 0) break;
      if ((await this.ledger.adjust(userId, type, -remaining, 0)) !== null) {
        draws.push({ type, amount: remaining });
        remaining = 0;
        break;
      }
      for (let attempt = 0; attempt < DRAW_ATTEMPTS; attempt++) {
        const take = Math.min(await this.ledger.balance(userId, type), remaining);
        if (take <= 0) break;
        if ((await this.ledger.adjust(userId, type, -take, 0)) !== null) {
          draws.push({ type, amount: take });
          remaining -= take;
          break;
        }
      }
    }
    return draws;
  }

  /** Hold `tokens` (fee included) for a call. Replaying a requestId returns the same reservation. */
  async reserve(userId: string, tokens: number, requestId: string, orderP: Promise<readonly BalanceType[]>): Promise<Reservation> {
    const key = reservationKey(userId, requestId);
    const now = new Date();
    // Claim, preferences and replay check travel together: one round trip.
    const [claim, orderResult, finished] = await Promise.allSettled([
      this.storage.compareAndSet<OpenRecord>(key, undefined, { state: 'pending', at: now.toISOString() }),
      orderP,
      this.storage.get<FinishedRecord>(finishedKey(userId, requestId)),
    ]);
    if (claim.status === 'rejected') throw claim.reason;
    const failed = orderResult.status === 'rejected' ? orderResult.reason : finished.status === 'rejected' ? finished.reason : undefined;
    const done = finished.status === 'fulfilled' ? finished.value : undefined;
    if (failed !== undefined || done) {
      if (claim.value) await this.storage.delete(key).catch(() => undefined);
      if (done) return done.reservation; // replay of a call that already ended
      throw failed;
    }
    if (!claim.value) {
      const existing = await this.storage.get<OpenRecord>(key);
      if (!existing || existing.state === 'pending') throw new CoreError('CONFLICT', 'a reservation for this request is in progress');
      return existing.reservation;
    }
    const order = (orderResult as PromiseFulfilledResult<readonly BalanceType[]>).value;
    const draws = await this.drawUpTo(userId, tokens, order);
    const drawn = draws.reduce((s, d) => s + d.amount, 0);
    if (drawn < tokens) {
      await this.undo(userId, draws);
      await this.storage.delete(key);
      throw new CoreError('PAYMENT_REQUIRED', 'insufficient tokens for this request', { details: { required: tokens } });
    }
    const reservation: Reservation = {
      requestId,
      userId,
      tokens,
      draws,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.ttlMs).toISOString(),
    };
    const entry = this.ledger.newEntry({
      kind: 'reserve',
      idempotencyKey: `reserve:${requestId}`,
      requestId,
      lines: draws.map((d) => ({ type: d.type, delta: -d.amount })),
    });
    const held: HeldRecord = { state: 'held', at: entry.at, reservation, entries: [entry] };
    await this.storage.set<OpenRecord>(key, held);
    await this.ledger.append(userId, entry);
    // A copy: a caller that modifies the reservation object cannot change what settle charges.
    this.heldByThisProcess.set(reservation, structuredClone(held));
    return reservation;
  }

  /** Give back a failed partial draw. If this fails the audit shows it; the error is logged. */
  private async undo(userId: string, draws: Draw[]): Promise<void> {
    for (const d of draws) {
      try {
        await this.ledger.adjust(userId, d.type, d.amount);
      } catch (err) {
        this.logger.error('billing: could not return a partial draw; run reconcile', { userId, type: d.type, amount: d.amount, error: String(err) });
        throw err;
      }
    }
  }

  /** Both records of a reservation, in one round trip. */
  private read(r: Reservation): Promise<[OpenRecord | undefined, FinishedRecord | undefined]> {
    return Promise.all([this.storage.get<OpenRecord>(reservationKey(r.userId!, r.requestId)), this.storage.get<FinishedRecord>(finishedKey(r.userId!, r.requestId))]);
  }

  /**
   * One round trip instead of two when this process reserved `r`: compare-and-set the held
   * record it wrote to 'closing'. A record still 'held' was never closed (finish only ever
   * follows a 'closing'), so success means this call owns the hold. Undefined: take the read path.
   */
  private async closeKnown(r: Reservation): Promise<{ kind: 'closed'; record: HeldRecord } | undefined> {
    const held = this.heldByThisProcess.get(r);
    if (!held) return undefined;
    this.heldByThisProcess.delete(r);
    const closing = { ...held, state: 'closing' as const, at: new Date().toISOString() };
    return (await this.storage.compareAndSet<OpenRecord>(reservationKey(r.userId!, r.requestId), held, closing)) ? { kind: 'closed', record: closing } : undefined;
  }

  /** Move a held record to 'closing' so settle and release can never both apply. */
  private async close(r: Reservation, open: OpenRecord | undefined, done: FinishedRecord | undefined): Promise<{ kind: 'closed'; record: HeldRecord } | { kind: 'done'; record: FinishedRecord }> {
    const key = reservationKey(r.userId!, r.requestId);
    if (done) {
      // An open record next to a finished one is a leftover of an interrupted finish.
      if (open) await this.storage.delete(key).catch(() => undefined);
      return { kind: 'done', record: done };
    }
    if (!open || open.state === 'pending') throw new CoreError('NOT_FOUND', 'unknown reservation');
    const closing = { ...open, state: 'closing' as const, at: new Date().toISOString() };
    if (open.state === 'held' && (await this.storage.compareAndSet<OpenRecord>(key, open, closing))) return { kind: 'closed', record: closing };
    const [, nowDone] = await this.read(r);
    if (nowDone) return { kind: 'done', record: nowDone };
    throw new CoreError('CONFLICT', 'this reservation is being settled or released concurrently');
  }

  /** Record the outcome, then append: the finished record is the write-ahead copy of the entry. */
  private async finish(userId: string, requestId: string, record: FinishedRecord, entry: LedgerEntry): Promise<void> {
    await this.storage.set<FinishedRecord>(finishedKey(userId, requestId), record, { ttlMs: FINISHED_TTL_MS });
    await Promise.all([this.storage.delete(reservationKey(userId, requestId)), this.ledger.append(userId, entry)]);
  }

  /**
   * Charge usage plus fee against the hold: the unused rest goes back (last drawn balance
   * first), and an overrun draws the difference from the balances as far as they go.
   */
  async settle(reservation: Reservation, usage: SettleUsage, feeRate: number, order: () => Promise<readonly BalanceType[]>): Promise<{ result: SettleResult; reservation: Reservation; replay: boolean }> {
    const closed = (await this.closeKnown(reservation)) ?? (await this.close(reservation, ...(await this.read(reservation))));
    if (closed.kind === 'done') {
      if (closed.record.state === 'settled') return { result: closed.record.result, reservation: closed.record.reservation, replay: true };
      throw new CoreError('CONFLICT', 'this reservation was already released');
    }
    const { reservation: held, entries } = closed.record;
    const userId = held.userId!;
    const used = Math.max(0, Math.ceil(usage.tokensUsed));
    const fee = platformFee(used, feeRate);
    const charge = used + fee;
    const lines: LedgerEntry['lines'] = [];
    let charged = charge;
    let uncollected = 0;
    let remainingBalance: number;
    if (charge <= held.tokens) {
      let refund = held.tokens - charge;
      for (const d of [...held.draws].reverse()) {
        const back = Math.min(d.amount, refund);
        if (back <= 0) continue;
        lines.push({ type: d.type, delta: back });
        refund -= back;
      }
      // Refunds and the read of untouched balances in one round trip; the results give the balance left.
      const values = await Promise.all(
        BALANCE_TYPES.map(async (type) => {
          const line = lines.find((l) => l.type === type);
          return line ? (await this.ledger.adjust(userId, type, line.delta))! : this.ledger.balance(userId, type);
        }),
      );
      remainingBalance = values.reduce((s, v) => s + v, 0);
    } else {
      // The consumption order is only needed here, when the call overran its hold.
      const extra = await this.drawUpTo(userId, charge - held.tokens, await order());
      const drawn = extra.reduce((s, d) => s + d.amount, 0);
      for (const d of extra) lines.push({ type: d.type, delta: -d.amount });
      charged = held.tokens + drawn;
      uncollected = charge - charged;
      if (uncollected > 0) this.logger.warn('billing: call overran its reservation beyond the balance', { userId, requestId: held.requestId, uncollected });
      const b = await this.ledger.balances(userId);
      remainingBalance = b.subscription + b.one_time;
    }
    const entry = this.ledger.newEntry({
      kind: 'settle',
      idempotencyKey: `settle:${held.requestId}`,
      requestId: held.requestId,
      lines,
      usage: {
        tokensUsed: used,
        tokensCharged: charged,
        platformFee: fee,
        ...(uncollected > 0 ? { uncollected } : {}),
        provider: usage.provider,
        model: usage.model,
        ...(usage.metadata ? { metadata: usage.metadata } : {}),
      },
    });
    const result: SettleResult = { tokensUsed: used, tokensCharged: charged, platformFee: fee, remainingBalance };
    await this.finish(userId, held.requestId, { state: 'settled', at: entry.at, reservation: held, entries: [...entries, entry], result }, entry);
    return { result, reservation: held, replay: false };
  }

  /** Give the whole hold back. A no-op on a reservation that is already settled or released. */
  async release(reservation: Reservation, reason: string): Promise<boolean> {
    const closed = (await this.closeKnown(reservation)) ?? (await this.close(reservation, ...(await this.read(reservation))));
    if (closed.kind === 'done') return false;
    const { reservation: held, entries } = closed.record;
    const userId = held.userId!;
    await Promise.all(held.draws.map((d) => this.ledger.adjust(userId, d.type, d.amount)));
    const entry = this.ledger.newEntry({
      kind: 'release',
      idempotencyKey: `release:${held.requestId}`,
      requestId: held.requestId,
      lines: held.draws.map((d) => ({ type: d.type, delta: d.amount })),
      note: { reason: reason.slice(0, 200) },
    });
    await this.finish(userId, held.requestId, { state: 'released', at: entry.at, reservation: held, entries: [...entries, entry] }, entry);
    return true;
  }

  /** Release holds whose call never settled (a crashed server, a lost client). Returns how many. */
  async sweepExpired(now = Date.now()): Promise<number> {
    let released = 0;
    for (const key of await this.storage.keys(RESERVATION_PREFIX)) {
      const rec = await this.storage.get<OpenRecord>(key);
      if (rec?.state !== 'held' || Date.parse(rec.reservation.expiresAt) > now) continue;
      try {
        if (await this.release(rec.reservation, 'expired')) released++;
      } catch (err) {
        this.logger.warn('billing: could not release an expired reservation', { requestId: rec.reservation.requestId, error: String(err) });
      }
    }
    return released;
  }
}
