import { randomUUID } from 'node:crypto';
import { CoreError } from '../../errors/CoreError.js';
import type { Storage } from '../../storage/Storage.js';
import { BALANCE_TYPES, type BalanceType, type CreditParams, type CreditResult, type LedgerEntry } from './types.js';

/** Storage keys; the user id is encoded so `a:b` can never collide with user `a`'s keys. */
export const ledgerKeys = {
  balance: (userId: string, type: BalanceType) => `bal:${enc(userId)}:${type}`,
  log: (userId: string) => `ledger:${enc(userId)}`,
  claim: (userId: string, key: string) => `idem:${enc(userId)}:${key}`,
  claimPrefix: (userId: string) => `idem:${enc(userId)}:`,
};

function enc(userId: string): string {
  return encodeURIComponent(userId);
}

/**
 * An idempotency claim. `pending` is written before any balance changes; `applied` carries the
 * ledger entry and is written after the balance changed but before the entry is appended, so a
 * crash between the two can be repaired by `reconcile` (write-ahead).
 */
export type Claim =
  | { state: 'pending'; fp: string; at: string }
  | { state: 'applied'; fp: string; at: string; entries: LedgerEntry[] };

export type Balances = Record<BalanceType, number>;

export interface AuditReport {
  balances: Balances;
  /** Sum of the ledger lines per type. */
  sums: Balances;
  consistent: boolean;
}

/**
 * The ledger of one storage: integer balances per type kept with atomic increments (never
 * below zero) and an append-only log per user. Invariant at rest: the ledger lines of a user
 * sum, per type, to the balance.
 */
export class Ledger {
  constructor(readonly storage: Storage) {}

  async balance(userId: string, type: BalanceType): Promise<number> {
    return (await this.storage.get<number>(ledgerKeys.balance(userId, type))) ?? 0;
  }

  async balances(userId: string): Promise<Balances> {
    const [subscription, oneTime] = await Promise.all(BALANCE_TYPES.map((t) => this.balance(userId, t)));
    return { subscription: subscription!, one_time: oneTime! };
  }

  /** Atomic add; with `floor`, refused (null) when the result would fall below it. */
  adjust(userId: string, type: BalanceType, delta: number, floor?: number): Promise<number | null> {
    return this.storage.increment(ledgerKeys.balance(userId, type), delta, floor === undefined ? {} : { min: floor });
  }

  async append(userId: string, entry: LedgerEntry): Promise<void> {
    await this.storage.append(ledgerKeys.log(userId), entry);
  }

  async entries(userId: string): Promise<LedgerEntry[]> {
    return (await this.storage.readLog<LedgerEntry>(ledgerKeys.log(userId))).map((e) => e.record);
  }

  newEntry(fields: Omit<LedgerEntry, 'id' | 'at'>): LedgerEntry {
    return { id: randomUUID(), at: new Date().toISOString(), ...fields };
  }

  /**
   * Add tokens once per idempotency key. A replay with the same key and amount returns the
   * first result and changes nothing; the same key with a different amount or type is a CONFLICT.
   */
  async credit(p: CreditParams): Promise<CreditResult> {
    if (!Number.isSafeInteger(p.tokens) || p.tokens <= 0) {
      throw new CoreError('INVALID_PARAMS', 'tokens must be a positive integer');
    }
    const claimKey = ledgerKeys.claim(p.userId, `credit:${p.idempotencyKey}`);
    const fp = `${p.type}:${p.tokens}`;
    const claimed = await this.storage.compareAndSet<Claim>(claimKey, undefined, { state: 'pending', fp, at: new Date().toISOString() });
    if (!claimed) {
      const existing = await this.storage.get<Claim>(claimKey);
      if (existing?.fp !== fp) {
        throw new CoreError('CONFLICT', 'this idempotency key was already used with a different amount or type');
      }
      if (existing.state === 'pending') {
        throw new CoreError('CONFLICT', 'a credit with this idempotency key is in progress; retry shortly');
      }
      return { applied: false, entryId: existing.entries[0]!.id, balance: await this.balance(p.userId, p.type) };
    }
    const balance = (await this.adjust(p.userId, p.type, p.tokens))!;
    const entry = this.newEntry({
      kind: 'credit',
      idempotencyKey: p.idempotencyKey,
      lines: [{ type: p.type, delta: p.tokens }],
      source: p.source,
      ...(p.note ? { note: p.note } : {}),
    });
    await this.storage.set<Claim>(claimKey, { state: 'applied', fp, at: entry.at, entries: [entry] });
    await this.append(p.userId, entry);
    return { applied: true, entryId: entry.id, balance };
  }

  /** Compare balances with the ledger sums. */
  async audit(userId: string): Promise<AuditReport> {
    const [balances, entries] = await Promise.all([this.balances(userId), this.entries(userId)]);
    const sums: Balances = { subscription: 0, one_time: 0 };
    for (const e of entries) for (const l of e.lines) sums[l.type] += l.delta;
    return { balances, sums, consistent: BALANCE_TYPES.every((t) => balances[t] === sums[t]) };
  }
}
