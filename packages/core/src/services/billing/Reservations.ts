import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { TxRead, TxWrite } from '../../kernel/Storage.js';
import { budgetKeys, effectiveBudget, exceededAlertWrites, SPEND_TTL_MS, thresholdAlertWrites, type BudgetRecord } from './Budgets.js';
import { platformFee } from './fee.js';
import { usageKeys, usageWrites } from './globalUsage.js';
import type { UsageRecordItem } from './history.js';
import { accountOf, ledgerKeys, type Account, type Ledger } from './Ledger.js';
import {
  hasUsdLimit,
  releaseSpend,
  reserveSpend,
  settleSpend,
  toNanos,
  type BudgetCrossing,
  type BudgetRefusal,
  type SpendRecord,
  type Worst,
} from '../spend/periodSpend.js';
import type { BalanceType, BudgetAlertSink, LedgerEntry, Reservation, SettleResult, SettleUsage } from './types.js';
import { keySpendTxKeys, releaseKeySpend, reserveKeySpend, settleKeySpend } from '../apiKeys/keySpend.js';

/**
 * A hold's records. While the call runs, `hold:<user>:<requestId>` holds the reservation and is
 * listed in the storage's due index at its expiry; when it ends, the transaction that settles or
 * releases it deletes that row and writes `holddone:<user>:<requestId>` (kept a week for replays).
 */
export interface HoldRecord {
  reservation: Reservation;
}
/** `late`: settled after its hold expired and was released; `lost`: settled after a crash of the store lost its hold (see `settle`). */
export type FinishedRecord =
  | { state: 'released'; reservation: Reservation; reason?: string }
  | { state: 'settled'; reservation: Reservation; result: SettleResult; late?: true; lost?: true };

const enc = encodeURIComponent;
export const HOLD_PREFIX = 'hold:';
export const holdKey = (userId: string, requestId: string) => `${HOLD_PREFIX}${enc(userId)}:${enc(requestId)}`;
export const finishedKey = (userId: string, requestId: string) => `holddone:${enc(userId)}:${enc(requestId)}`;
const FINISHED_TTL_MS = 7 * 24 * 3600_000;
/**
 * A reservation younger than this, with neither a hold nor a finished record, was never closed:
 * its hold was lost (a finished record, kept FINISHED_TTL_MS, would still be there). Older ones
 * cannot be told from a settled call whose record expired, so they stay unknown. One hour short
 * of the record's life, for clocks that differ between instances.
 */
const LOST_HOLD_MAX_AGE_MS = FINISHED_TTL_MS - 3600_000;
/** Holds released per sweep query. */
const SWEEP_BATCH = 200;
/** Due holds whose failed release this process remembers having logged (then it starts afresh). */
const MAX_LOGGED_FAILURES = 10_000;

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
 * Who pays, decided inside the reservation's transaction (Reservations.decideAndReserve): the
 * platform, drawing in `order`, or another answer (`decided`) with nothing held. Pure.
 */
export interface PayerChoice<D> {
  /** Rows the decision reads besides the account (declared to the transaction). */
  keys: readonly string[];
  choose(read: TxRead, account: Readonly<Account>): { order: readonly BalanceType[] } | { decided: D };
}

/** What reserve did: held the tokens, or refused the call for its budget (`alerted`: this refusal sent the period's alert). */
export type ReserveOutcome = { held: Reservation } | { refused: BudgetRefusal; alerted: boolean };

export interface SettleOutcome {
  result: SettleResult;
  reservation: Reservation;
  replay: boolean;
  /** Budget thresholds this charge reached first (their alerts were written with it). */
  crossings: BudgetCrossing[];
  /** The one-time balance this charge left (the `oneTimeConsumed` event's figure, without a read after it). */
  oneTimeLeft?: number;
}

/** Budget settings of the reservations. */
export interface ReservationBudgets {
  defaults: ResolvedConfig['billing']['defaultBudget'];
  alerts?: BudgetAlertSink | undefined;
}

/**
 * Platform-token holds for authenticated users: reserve before a call, settle or release after.
 * Each of reserve, settle and release is one storage transaction (one round trip on SQLite,
 * two on PostgreSQL): the account row, the hold record, the ledger entry, the histories, the
 * budget's period spend and any budget alert change together or not at all.
 */
export class Reservations {
  constructor(
    private readonly ledger: Ledger,
    private readonly logger: Logger,
    private readonly ttlMs: number,
    private readonly budgets: ReservationBudgets = { defaults: {} },
    /** `onFailure`: a due hold's release failed (the hold-sweep failures metric); `logged`: the keys already logged. */
    private readonly sweepFailures: { onFailure?: (() => void) | undefined; logged: Set<string> } = { logged: new Set() },
  ) {}

  private get storage() {
    return this.ledger.storage;
  }

  /**
   * Hold `tokens` (fee included) for a call, and add its worst case (`worst`: tokens before the
   * fee, cost) to the budget's reserved figures, in one transaction that also reads the budget:
   * a call the budget cannot cover is refused, so concurrent calls can never overspend it.
   * Replaying a requestId returns the same reservation.
   *
   * Not durable (`durable: false`): on PostgreSQL the hold is acknowledged before its WAL flush,
   * about half of a reservation's time. A crash of the store may lose it, whole (the draws, the
   * hold, the reserved budget figures, the ledger line together); `settle` then charges the whole
   * call, so money stays exact. What is lost meanwhile is only the holds' protection: the calls in
   * flight at the crash can spend past the balance and the budgets by at most what they held.
   * `apiKeyId`: the call came through an API key, whose budget is checked and spend held in the
   * same transaction (services/apiKeys/keySpend.ts).
   */
  reserve(
    userId: string,
    tokens: number,
    requestId: string,
    order: readonly BalanceType[],
    worst: Worst,
    apiKeyId?: string,
  ): Promise<ReserveOutcome> {
    return this.decideAndReserve(
      userId,
      tokens,
      requestId,
      { keys: [], choose: () => ({ order }) },
      worst,
      apiKeyId,
    ) as Promise<ReserveOutcome>;
  }

  /**
   * `reserve` with the payer decision in the same transaction: `payer.choose` reads the rows it
   * declared (`payer.keys`: the user's preferences, the stored key's slot) and the account, and
   * either lets the platform pay (in the order it returns) or answers `{ decided }` with nothing
   * written. So a warm metered call's decision and hold are one store round trip, and the decision
   * is checked against the same state the hold is drawn from (the store's commit proves every row
   * read). A decision other than the platform writes nothing: on a guessed transaction the store
   * then reads first and plans again, so that answer is never made on a stale guess.
   */
  decideAndReserve<D>(
    userId: string,
    tokens: number,
    requestId: string,
    payer: PayerChoice<D>,
    worst: Worst,
    apiKeyId?: string,
  ): Promise<ReserveOutcome | { decided: D }> {
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, requestId);
    const doneKey = finishedKey(userId, requestId);
    const budgetKey = budgetKeys.budget(userId);
    const spendKey = budgetKeys.spend(userId);
    const keyKeys = apiKeyId ? keySpendTxKeys(apiKeyId) : [];
    return this.storage.transact<ReserveOutcome | { decided: D }>(
      [accountKey, key, doneKey, budgetKey, spendKey, ...keyKeys, ...payer.keys],
      (read) => {
        const done = read<FinishedRecord>(doneKey);
        if (done) return { writes: [], result: { held: done.reservation } }; // replay of a call that already ended
        const open = read<HoldRecord>(key);
        if (open) return { writes: [], result: { held: open.reservation } };
        const account = accountOf(read<Partial<Account>>(accountKey));
        const chosen = payer.choose(read, account);
        if ('decided' in chosen) return { writes: [], result: { decided: chosen.decided } };
        const draws = drawFrom(account, tokens, chosen.order);
        if (draws.reduce((s, d) => s + d.amount, 0) < tokens) {
          throw new CoreError('PAYMENT_REQUIRED', 'insufficient tokens for this request', { details: { required: tokens } });
        }
        const at = new Date();
        const now = at.getTime();
        const budget = effectiveBudget(read<BudgetRecord>(budgetKey), this.budgets.defaults);
        const checked = reserveSpend(read<SpendRecord>(spendKey), budget, worst, at);
        if (!checked.ok) {
          // Refused: nothing is held. The period's first refusal per limit records its alert.
          const r = checked.refusal;
          const mark = `${r.metric}:exceeded`;
          const period = checked.spend[r.period];
          if (period.alerted.includes(mark)) return { writes: [], result: { refused: r, alerted: false } };
          period.alerted.push(mark);
          const writes: TxWrite[] = [
            { op: 'set', key: spendKey, value: checked.spend, ttlMs: SPEND_TTL_MS },
            ...exceededAlertWrites(this.budgets.alerts, userId, r),
          ];
          return { writes, result: { refused: r, alerted: true } };
        }
        // Throws the key's PAYMENT_REQUIRED when its budget cannot cover the call: nothing is written.
        const byKey = apiKeyId ? reserveKeySpend(read, apiKeyId, worst, at) : undefined;
        // Read in the same transaction as the limits it reports, so it is exactly what was checked.
        const usdLimited = hasUsdLimit(budget) || byKey?.usdLimited === true;
        const reservation: Reservation = {
          requestId,
          userId,
          tokens,
          draws,
          budget: checked.hold,
          ...(byKey ? { apiKey: byKey.hold } : {}),
          ...(usdLimited ? { usdLimited: true as const } : {}),
          createdAt: at.toISOString(),
          expiresAt: new Date(now + this.ttlMs).toISOString(),
        };
        const entry = this.ledger.newEntry(
          {
            kind: 'reserve',
            idempotencyKey: `reserve:${requestId}`,
            requestId,
            lines: draws.map((d) => ({ type: d.type, delta: -d.amount })),
          },
          at,
        );
        const writes: TxWrite[] = [
          { op: 'set', key: accountKey, value: account },
          { op: 'set', key, value: { reservation } satisfies HoldRecord, dueAt: now + this.ttlMs },
          { op: 'set', key: spendKey, value: checked.spend, ttlMs: SPEND_TTL_MS },
          { op: 'append', log: ledgerKeys.log(userId), record: entry },
          ...(byKey?.writes ?? []),
        ];
        return { writes, result: { held: reservation } };
      },
      { durable: false },
    );
  }

  /**
   * Charge usage plus fee against the hold: the unused rest goes back (last drawn balance
   * first), and an overrun draws the difference from the balances in `order` as far as they go.
   *
   * A settle that arrives after its hold expired and was released (the store was down when the
   * call ended, and another instance's sweep got there first) still charges the call: the hold
   * was already given back, so the whole charge is drawn now, as an overrun would be. A call
   * whose upstream answered is never free.
   *
   * A settle that finds neither its hold nor a finished record, for a reservation younger than
   * the finished records live, is charged the same way: the store lost the hold (reserve is not
   * durable), and with it everything the reserve wrote (draws, reserved budget and API key
   * figures, ledger line), so nothing is given back or taken off those figures; `holddone:` says
   * `lost: true` and the ledger entry `note.holdLost`. Older unknown reservations are NOT_FOUND.
   */
  async settle(reservation: Reservation, usage: SettleUsage, feeRate: number, order: readonly BalanceType[]): Promise<SettleOutcome> {
    const userId = reservation.userId!;
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, reservation.requestId);
    const doneKey = finishedKey(userId, reservation.requestId);
    const budgetKey = budgetKeys.budget(userId);
    const spendKey = budgetKeys.spend(userId);
    const at = new Date();
    const day = at.toISOString().slice(0, 10);
    const dayKeys = usageKeys(userId, day);
    const costUsd = usage.costUsd ?? 0;
    const keyHold = reservation.apiKey;
    // A store may run the plan more than once (an optimistic transaction that lost a race runs it
    // again): its warnings are kept per run and logged once, for the run that committed.
    let warnings: [string, Record<string, unknown>][] = [];
    const outcome = await this.storage.transact<SettleOutcome>(
      [accountKey, key, doneKey, budgetKey, spendKey, dayKeys.userDay, dayKeys.global, ...(keyHold ? keySpendTxKeys(keyHold.keyId) : [])],
      (read) => {
        warnings = [];
        const done = read<FinishedRecord>(doneKey);
        if (done?.state === 'settled')
          return { writes: [], result: { result: done.result, reservation: done.reservation, replay: true, crossings: [] } };
        const late = done?.state === 'released' && done.reason === 'expired';
        if (done && !late) throw new CoreError('CONFLICT', 'this reservation was already released');
        const open = late ? undefined : read<HoldRecord>(key);
        const lost = !done && !open;
        if (lost && !(at.getTime() - Date.parse(reservation.createdAt) < LOST_HOLD_MAX_AGE_MS))
          throw new CoreError('NOT_FOUND', 'unknown reservation');
        const held = late ? done!.reservation : open ? open.reservation : reservation;
        // What the hold still holds: nothing for a late settle (its release gave it all back), nor for a lost one (never held).
        const gone = late || lost;
        const heldTokens = gone ? 0 : held.tokens;
        const heldDraws = gone ? [] : held.draws;
        const account = accountOf(read<Partial<Account>>(accountKey));
        const used = Math.max(0, Math.ceil(usage.tokensUsed));
        const fee = platformFee(used, feeRate);
        const charge = used + fee;
        const lines: LedgerEntry['lines'] = [];
        const paid: Partial<Record<BalanceType, number>> = {};
        for (const d of heldDraws) paid[d.type] = (paid[d.type] ?? 0) + d.amount;
        let charged = charge;
        if (charge <= heldTokens) {
          let refund = heldTokens - charge;
          for (const d of [...heldDraws].reverse()) {
            const back = Math.min(d.amount, refund);
            if (back <= 0) continue;
            lines.push({ type: d.type, delta: back });
            account[d.type] += back;
            paid[d.type]! -= back;
            refund -= back;
          }
        } else {
          const extra = drawFrom(account, charge - heldTokens, order);
          for (const d of extra) {
            lines.push({ type: d.type, delta: -d.amount });
            paid[d.type] = (paid[d.type] ?? 0) + d.amount;
          }
          charged = heldTokens + extra.reduce((s, d) => s + d.amount, 0);
        }
        const uncollected = charge - charged;
        account.used += used;
        account.fee += fee;
        const entry = this.ledger.newEntry(
          {
            kind: 'settle',
            idempotencyKey: `settle:${held.requestId}`,
            requestId: held.requestId,
            lines,
            ...(lost ? { note: { holdLost: true } } : {}),
            usage: {
              tokensUsed: used,
              tokensCharged: charged,
              platformFee: fee,
              ...(uncollected > 0 ? { uncollected } : {}),
              estimatedCostUsd: costUsd,
              provider: usage.provider,
              model: usage.model,
              ...(usage.metadata ? { metadata: usage.metadata } : {}),
            },
          },
          at,
        );
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
          estimatedCostUsd: costUsd,
          ...(usage.metadata ? { metadata: usage.metadata } : {}),
          ...(held.apiKey ? { apiKeyId: held.apiKey.keyId } : {}),
          paidBy: Object.fromEntries(Object.entries(paid).filter(([, v]) => v !== 0)),
        };
        const result: SettleResult = {
          tokensUsed: used,
          tokensCharged: charged,
          platformFee: fee,
          remainingBalance: account.subscription + account.one_time,
        };
        const budget = effectiveBudget(read<BudgetRecord>(budgetKey), this.budgets.defaults);
        // A late settle's reserved budget figures were removed by its release, a lost one's never added: take nothing off them.
        const budgetHold = gone && held.budget ? { ...held.budget, tokens: 0, usdNanos: 0 } : held.budget;
        const { spend, crossings } = settleSpend(
          read<SpendRecord>(spendKey),
          budget,
          budgetHold,
          { tokens: used, usdNanos: toNanos(costUsd) },
          at,
        );
        const writes: TxWrite[] = [
          { op: 'set', key: accountKey, value: account },
          { op: 'delete', key },
          {
            op: 'set',
            key: doneKey,
            value: {
              state: 'settled',
              reservation: held,
              result,
              ...(late ? { late: true as const } : {}),
              ...(lost ? { lost: true as const } : {}),
            } satisfies FinishedRecord,
            ttlMs: FINISHED_TTL_MS,
          },
          { op: 'append', log: ledgerKeys.log(userId), record: entry },
          { op: 'append', log: ledgerKeys.usage(userId), record: item },
          ...usageWrites(read, userId, day, item),
          { op: 'set', key: spendKey, value: spend, ttlMs: SPEND_TTL_MS },
          ...thresholdAlertWrites(this.budgets.alerts, userId, crossings),
          ...(keyHold && held.apiKey
            ? settleKeySpend(
                read,
                gone ? { ...held.apiKey, tokens: 0, usdNanos: 0 } : held.apiKey,
                { tokens: used, usdNanos: toNanos(costUsd) },
                at,
              )
            : []),
        ];
        if (uncollected > 0)
          warnings.push(['billing: call overran its reservation beyond the balance', { userId, requestId: held.requestId, uncollected }]);
        if (lost)
          warnings.push(['billing: settled a call whose hold the store lost; charged in full', { userId, requestId: held.requestId }]);
        return { writes, result: { result, reservation: held, replay: false, crossings, oneTimeLeft: account.one_time } };
      },
    );
    for (const [message, fields] of warnings) this.logger.warn(message, fields);
    return outcome;
  }

  /**
   * Give the whole hold back. False (nothing changed) when it is already settled or released,
   * when there is no such hold (a store crash lost it, whole: nothing was held), or, with
   * `expiredBy`, when it has not expired by then.
   */
  release(reservation: Reservation, reason: string, expiredBy?: number): Promise<boolean> {
    return this.releaseHold(reservation, reason, expiredBy, 'nothing');
  }

  /**
   * Release the hold of a reservation the store did not answer (it timed out, or the connection
   * was cut), whatever its expiry. Its transaction may not have been applied yet: PostgreSQL can
   * still be running it (waiting for a lock the client gave up on), a hung Redis runs it when it
   * wakes. So when no hold is there, the request id is closed (`holddone:` released): the late
   * reservation then finds its call ended (its row check fails, or it reads the record) and holds
   * nothing, instead of holding the user's tokens until the hold's expiry.
   */
  releaseUnanswered(stub: Reservation, reason: string): Promise<boolean> {
    return this.releaseHold(stub, reason, Number.POSITIVE_INFINITY, 'close');
  }

  /** `absent`: what to do when there is no hold: nothing, or close the request id (releaseUnanswered). */
  private async releaseHold(
    reservation: Reservation,
    reason: string,
    expiredBy: number | undefined,
    absent: 'nothing' | 'close',
  ): Promise<boolean> {
    const userId = reservation.userId!;
    // The sweeper knows only the hold's key: read which API key the hold has, to declare its spend row.
    const keyHold =
      reservation.apiKey ??
      (expiredBy !== undefined
        ? (await this.storage.get<HoldRecord>(holdKey(userId, reservation.requestId)))?.reservation.apiKey
        : undefined);
    const accountKey = ledgerKeys.account(userId);
    const key = holdKey(userId, reservation.requestId);
    const doneKey = finishedKey(userId, reservation.requestId);
    const spendKey = budgetKeys.spend(userId);
    return this.storage.transact([accountKey, key, doneKey, spendKey, ...(keyHold ? keySpendTxKeys(keyHold.keyId) : [])], (read) => {
      if (read(doneKey)) return { writes: [], result: false };
      const open = read<HoldRecord>(key);
      if (!open && absent === 'close') {
        const closed: FinishedRecord = {
          state: 'released',
          reservation: { ...reservation, tokens: 0, draws: [] },
          reason: reason.slice(0, 200),
        };
        return { writes: [{ op: 'set', key: doneKey, value: closed, ttlMs: FINISHED_TTL_MS }], result: false };
      }
      if (!open) return { writes: [], result: false };
      const held = open.reservation;
      if (expiredBy !== undefined && Date.parse(held.expiresAt) > expiredBy) return { writes: [], result: false };
      const account = accountOf(read<Partial<Account>>(accountKey));
      for (const d of held.draws) account[d.type] += d.amount;
      const entry = this.ledger.newEntry(
        {
          kind: 'release',
          idempotencyKey: `release:${held.requestId}`,
          requestId: held.requestId,
          lines: held.draws.map((d) => ({ type: d.type, delta: d.amount })),
          note: { reason: reason.slice(0, 200) },
        },
        new Date(),
      );
      const writes: TxWrite[] = [
        { op: 'set', key: accountKey, value: account },
        { op: 'delete', key },
        {
          op: 'set',
          key: doneKey,
          value: { state: 'released', reservation: held, reason: reason.slice(0, 200) } satisfies FinishedRecord,
          ttlMs: FINISHED_TTL_MS,
        },
        { op: 'append', log: ledgerKeys.log(userId), record: entry },
        { op: 'set', key: spendKey, value: releaseSpend(read<SpendRecord>(spendKey), held.budget, new Date()), ttlMs: SPEND_TTL_MS },
        ...(keyHold && held.apiKey ? releaseKeySpend(read, held.apiKey, new Date()) : []),
      ];
      return { writes, result: true };
    });
  }

  /**
   * Push an open hold's expiry `ttlMs` from now (its call is still running: a stream longer than
   * the TTL), so no sweep, on any instance, releases it under the call. False when the hold is
   * no longer open (settled, released, swept or lost). Not durable, like the hold itself.
   */
  renew(reservation: Reservation): Promise<boolean> {
    const key = holdKey(reservation.userId!, reservation.requestId);
    return this.storage.transact(
      [key],
      (read) => {
        const open = read<HoldRecord>(key);
        if (!open) return { writes: [], result: false };
        const dueAt = Date.now() + this.ttlMs;
        const held: Reservation = { ...open.reservation, expiresAt: new Date(dueAt).toISOString() };
        return { writes: [{ op: 'set', key, value: { reservation: held } satisfies HoldRecord, dueAt }], result: true };
      },
      { durable: false },
    );
  }

  /**
   * Release holds past their expiry (a crashed server, a lost client), found on the due index.
   * Returns how many. One due hold that cannot be released (a corrupt record or key, a store error
   * on its transaction) never keeps the others waiting: the round passes over it and asks the
   * next page for as many more keys as it passed over (the index lists them first, by due time),
   * so every other due hold is released in the same round. Each such hold is logged once per
   * process, and every failed release counts in `onFailure` (the hold-sweep failures metric).
   */
  async sweepExpired(now = Date.now(), skip?: (userId: string, requestId: string) => boolean): Promise<number> {
    let released = 0;
    // Keys this round passed over: failed, left to this process's pending settle (skip), or not
    // released (not expired by the record itself). They stay on the index, first.
    const passed = new Set<string>();
    for (;;) {
      const limit = SWEEP_BATCH + passed.size;
      const keys = await this.storage.dueKeys(HOLD_PREFIX, now, limit);
      const fresh = keys.filter((k) => !passed.has(k));
      for (const key of fresh) {
        if (await this.sweepOne(key, now, skip)) released++;
        else passed.add(key);
      }
      if (keys.length < limit || fresh.length === 0) return released;
    }
  }

  /** Release one due hold by its key; false when it was not released (skipped, not expired, already closed, or it failed). */
  private async sweepOne(key: string, now: number, skip?: (userId: string, requestId: string) => boolean): Promise<boolean> {
    try {
      const [user, request] = key.slice(HOLD_PREFIX.length).split(':');
      const stub = { requestId: decodeURIComponent(request!), userId: decodeURIComponent(user!) } as Reservation;
      if (skip?.(stub.userId!, stub.requestId)) return false;
      return await this.release(stub, 'expired', now);
    } catch (err) {
      this.sweepFailures.onFailure?.();
      if (!this.sweepFailures.logged.has(key)) {
        // A record that stays broken would otherwise log on every round.
        if (this.sweepFailures.logged.size >= MAX_LOGGED_FAILURES) this.sweepFailures.logged.clear();
        this.sweepFailures.logged.add(key);
        this.logger.warn('billing: could not release an expired reservation; the sweep goes on without it', {
          key,
          error: String(err),
        });
      }
      return false;
    }
  }
}
