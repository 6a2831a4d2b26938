import { CoreError } from '../../errors/CoreError.js';
import type { Logger } from '../../runtime/Logger.js';
import type { TxWrite } from '../../storage/Storage.js';
import { platformFee } from './fee.js';
import { addToDay, USAGE_DAY_TTL_MS, type UsageDay, type UsageRecordItem } from './history.js';
import { accountOf, ledgerKeys, type Account, type Ledger } from './Ledger.js';
import type { BalanceType, LedgerEntry, Reservation, SettleResult, SettleUsage } from './types.js';

/**
 * A hold's records. While the call runs, `hold:<user>:<requestId>` holds the reservation and is
 * listed in the storage's due index at its expiry; when it ends, the transaction that settles or
 * releases it deletes that row and writes `holddone:<user>:<requestId>` (kept a week for replays).
 */
export interface HoldRecord {
  reservation: Reservation;
}
export type FinishedRecord = { state: 'released'; reservation: Reservation } | { state: 'settled'; reservation: Reservation; result: SettleResult };

const enc = encodeURIComponent;
export const HOLD_PREFIX = 'hold:';
export const holdKey = (userId: string, requestId: string) => `${HOLD_PREFIX}${enc(userId)}:${enc(requestId)}`;
export const finishedKey = (userId: string, requestId: string) => `holddone:${enc(userId)}:${enc(requestId)}`;
const FINISHED_TTL_MS = 7 * 24 * 3600_000;
/** Holds released per sweep query. */
const SWEEP_BATCH = 200;

export type Draw = { type: BalanceType; amount: number };

/** Take up to `tokens` from `account` in `order` (mutates it); returns what each balance gave. */
function drawFrom(account: Account, tokens: number, order: readonly BalanceType[]): Draw[] {
  let remaining = tokens;
  const draws: Draw[] = [];
  for (const type of order) {
    if (remaining === 0) break;
    const take = Math.min(account[type], remaining);
    if (take <= 0) continue;
    account[type] -= take;
    remaining -= take;
    draws.push({ type, amount: take });
  }
  return draws;
}

/**
 * Platform-token holds for authenticated users: reserve before a call, settle or release after.
 * Each of reserve, settle and release is one storage transaction (one round trip on SQLite,
 * two on PostgreSQL): the account row, the hold record, the ledger entry and the histories
 * change together or not at all.
 */
export class Reservations {
  constructor(
    private readonly ledger: Ledger,
    private readonly logger: Logger,
    private readonly ttlMs: number,
  ) {}

  private get storage() {
    return this.ledger.storage;
  }

  /** Hold `tokens` (fee included) for a call. Replaying a requestId returns the same reservation. */
  reserve(userId: string, tokens: number, requestId: string, order: readonly BalanceType[]): Promise<Reservation> {
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, requestId);
    const doneKey = finishedKey(userId, requestId);
    return this.storage.transact([accountKey, key, doneKey], (read) => {
      const done = read<FinishedRecord>(doneKey);
      if (done) return { writes: [], result: done.reservation }; // replay of a call that already ended
      const open = read<HoldRecord>(key);
      if (open) return { writes: [], result: open.reservation };
      const account = accountOf(read<Partial<Account>>(accountKey));
      const draws = drawFrom(account, tokens, order);
      if (draws.reduce((s, d) => s + d.amount, 0) < tokens) {
        throw new CoreError('PAYMENT_REQUIRED', 'insufficient tokens for this request', { details: { required: tokens } });
      }
      const now = Date.now();
      const reservation: Reservation = { requestId, userId, tokens, draws, createdAt: new Date(now).toISOString(), expiresAt: new Date(now + this.ttlMs).toISOString() };
      const entry = this.ledger.newEntry({ kind: 'reserve', idempotencyKey: `reserve:${requestId}`, requestId, lines: draws.map((d) => ({ type: d.type, delta: -d.amount })) });
      const writes: TxWrite[] = [
        { op: 'set', key: accountKey, value: account },
        { op: 'set', key, value: { reservation } satisfies HoldRecord, dueAt: now + this.ttlMs },
        { op: 'append', log: ledgerKeys.log(userId), record: entry },
      ];
      return { writes, result: reservation };
    });
  }

  /**
   * Charge usage plus fee against the hold: the unused rest goes back (last drawn balance
   * first), and an overrun draws the difference from the balances in `order` as far as they go.
   */
  settle(reservation: Reservation, usage: SettleUsage, feeRate: number, order: readonly BalanceType[]): Promise<{ result: SettleResult; reservation: Reservation; replay: boolean }> {
    const userId = reservation.userId!;
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, reservation.requestId);
    const doneKey = finishedKey(userId, reservation.requestId);
    const at = new Date();
    const dayKey = ledgerKeys.usageDay(userId, at.toISOString().slice(0, 10));
    return this.storage.transact<{ result: SettleResult; reservation: Reservation; replay: boolean }>([accountKey, key, doneKey, dayKey], (read) => {
      const done = read<FinishedRecord>(doneKey);
      if (done?.state === 'settled') return { writes: [], result: { result: done.result, reservation: done.reservation, replay: true } };
      if (done) throw new CoreError('CONFLICT', 'this reservation was already released');
      const open = read<HoldRecord>(key);
      if (!open) throw new CoreError('NOT_FOUND', 'unknown reservation');
      const held = open.reservation;
      const account = accountOf(read<Partial<Account>>(accountKey));
      const used = Math.max(0, Math.ceil(usage.tokensUsed));
      const fee = platformFee(used, feeRate);
      const charge = used + fee;
      const lines: LedgerEntry['lines'] = [];
      const paid: Partial<Record<BalanceType, number>> = {};
      for (const d of held.draws) paid[d.type] = (paid[d.type] ?? 0) + d.amount;
      let charged = charge;
      if (charge <= held.tokens) {
        let refund = held.tokens - charge;
        for (const d of [...held.draws].reverse()) {
          const back = Math.min(d.amount, refund);
          if (back <= 0) continue;
          lines.push({ type: d.type, delta: back });
          account[d.type] += back;
          paid[d.type]! -= back;
          refund -= back;
        }
      } else {
        const extra = drawFrom(account, charge - held.tokens, order);
        for (const d of extra) {
          lines.push({ type: d.type, delta: -d.amount });
          paid[d.type] = (paid[d.type] ?? 0) + d.amount;
        }
        charged = held.tokens + extra.reduce((s, d) => s + d.amount, 0);
      }
      const uncollected = charge - charged;
      account.used += used;
      account.fee += fee;
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
      const item: UsageRecordItem = {
        id: entry.id,
        at: entry.at,
        requestId: held.requestId,
        mode: 'platform',
        provider: usage.provider,
        model: usage.model,
        tokensUsed: used,
        tokensCharged: charged,
        platformFee: fee,
        ...(usage.metadata ? { metadata: usage.metadata } : {}),
        paidBy: Object.fromEntries(Object.entries(paid).filter(([, v]) => v !== 0)),
      };
      const result: SettleResult = { tokensUsed: used, tokensCharged: charged, platformFee: fee, remainingBalance: account.subscription + account.one_time };
      const writes: TxWrite[] = [
        { op: 'set', key: accountKey, value: account },
        { op: 'delete', key },
        { op: 'set', key: doneKey, value: { state: 'settled', reservation: held, result } satisfies FinishedRecord, ttlMs: FINISHED_TTL_MS },
        { op: 'append', log: ledgerKeys.log(userId), record: entry },
        { op: 'append', log: ledgerKeys.usage(userId), record: item },
        { op: 'set', key: dayKey, value: addToDay(read<UsageDay>(dayKey), item), ttlMs: USAGE_DAY_TTL_MS },
      ];
      if (uncollected > 0) this.logger.warn('billing: call overran its reservation beyond the balance', { userId, requestId: held.requestId, uncollected });
      return { writes, result: { result, reservation: held, replay: false } };
    });
  }

  /**
   * Give the whole hold back. False (nothing changed) when it is already settled or released,
   * or, with `expiredBy`, when it has not expired by then.
   */
  release(reservation: Reservation, reason: string, expiredBy?: number): Promise<boolean> {
    const userId = reservation.userId!;
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, reservation.requestId);
    const doneKey = finishedKey(userId, reservation.requestId);
    return this.storage.transact([accountKey, key, doneKey], (read) => {
      if (read(doneKey)) return { writes: [], result: false };
      const open = read<HoldRecord>(key);
      if (!open) {
        if (expiredBy !== undefined) return { writes: [], result: false };
        throw new CoreError('NOT_FOUND', 'unknown reservation');
      }
      const held = open.reservation;
      if (expiredBy !== undefined && Date.parse(held.expiresAt) > expiredBy) return { writes: [], result: false };
      const account = accountOf(read<Partial<Account>>(accountKey));
      for (const d of held.draws) account[d.type] += d.amount;
      const entry = this.ledger.newEntry({
        kind: 'release',
        idempotencyKey: `release:${held.requestId}`,
        requestId: held.requestId,
        lines: held.draws.map((d) => ({ type: d.type, delta: d.amount })),
        note: { reason: reason.slice(0, 200) },
      });
      const writes: TxWrite[] = [
        { op: 'set', key: accountKey, value: account },
        { op: 'delete', key },
        { op: 'set', key: doneKey, value: { state: 'released', reservation: held } satisfies FinishedRecord, ttlMs: FINISHED_TTL_MS },
        { op: 'append', log: ledgerKeys.log(userId), record: entry },
      ];
      return { writes, result: true };
    });
  }

  /** Release holds past their expiry (a crashed server, a lost client), found on the due index. Returns how many. */
  async sweepExpired(now = Date.now()): Promise<number> {
    let released = 0;
    for (;;) {
      const keys = await this.storage.dueKeys(HOLD_PREFIX, now, SWEEP_BATCH);
      let progressed = 0;
      for (const key of keys) {
        const [user, request] = key.slice(HOLD_PREFIX.length).split(':');
        const stub = { requestId: decodeURIComponent(request!), userId: decodeURIComponent(user!) } as Reservation;
        try {
          if (await this.release(stub, 'expired', now)) {
            released++;
            progressed++;
          }
        } catch (err) {
          this.logger.warn('billing: could not release an expired reservation', { requestId: stub.requestId, error: String(err) });
        }
      }
      if (keys.length < SWEEP_BATCH || progressed === 0) return released;
    }
  }
}
