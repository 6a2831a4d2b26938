import { randomUUID } from 'node:crypto';
import { CoreError } from '../../kernel/CoreError.js';
import type { Storage, TxWrite } from '../../kernel/Storage.js';
import { BALANCE_TYPES, type BalanceType, type CreditParams, type CreditResult, type LedgerEntry, type PurchaseItem } from './types.js';

const enc = encodeURIComponent;

/** Storage keys and logs; the user id is encoded so `a:b` can never collide with user `a`'s keys. */
export const ledgerKeys = {
  /** Balances and lifetime totals: one maintained row per user. */
  account: (userId: string) => `acct:${enc(userId)}`,
  /** Every balance movement (the audit trail: per type its lines sum to the balance). */
  log: (userId: string) => `ledger:${enc(userId)}`,
  /** Finished calls (platform and BYOK), for the usage and consumption histories. */
  usage: (userId: string) => `usage:${enc(userId)}`,
  /** Credits, all types or one type. */
  purchases: (userId: string, type?: BalanceType) => (type ? `purchases:${enc(userId)}:${type}` : `purchases:${enc(userId)}`),
  /** Idempotency claim of an operation. */
  claim: (userId: string, key: string) => `idem:${enc(userId)}:${key}`,
  /**
   * What retention archived of the ledger (services/retention): the sums per type of the lines
   * up to `throughSeq`, so an audit starts from it instead of from the dropped lines.
   */
  checkpoint: (userId: string) => `ledgercp:${enc(userId)}`,
  /** Usage totals of one UTC day, for analytics. */
  usageDay: (userId: string, day: string) => `usageday:${enc(userId)}:${day}`,
};

/** The maintained row of one user: balances per type and lifetime totals. */
export interface Account extends Record<BalanceType, number> {
  /** Tokens credited, ever. */
  purchased: number;
  /** Credits, ever (all types / subscription). */
  purchases: number;
  subscriptionPurchases: number;
  /** Tokens used by settled platform calls, ever (fees excluded). */
  used: number;
  /** Platform fees collected, ever. */
  fee: number;
}

export const emptyAccount = (): Account => ({
  subscription: 0,
  one_time: 0,
  purchased: 0,
  purchases: 0,
  subscriptionPurchases: 0,
  used: 0,
  fee: 0,
});
export const accountOf = (stored: Partial<Account> | undefined): Account => ({ ...emptyAccount(), ...stored });

/** An applied credit's claim: replays compare `fp` and return the first entry. */
interface CreditClaim {
  fp: string;
  entryId: string;
  at: string;
}

export type Balances = Record<BalanceType, number>;

/** The archived start of a user's ledger (ledgerKeys.checkpoint). */
export interface LedgerCheckpoint {
  /** Lines up to and including this sequence number are summed in `sums` (and may be gone). */
  throughSeq: number;
  sums: Balances;
}

export interface AuditReport {
  balances: Balances;
  /** Sum of the ledger lines per type. */
  sums: Balances;
  consistent: boolean;
}

/** Where a credit records that it was applied (a webhook event id is global, not per user). */
export interface CreditClaimOptions {
  key: string;
  /** What must match on a replay. */
  fingerprint: string;
  conflictMessage: string;
}

/**
 * The ledger: one account row per user (balances and lifetime totals) and append-only logs.
 * Every operation that moves tokens is one storage transaction that changes the account row,
 * appends the ledger entry and records its idempotency claim together, so at any crash instant
 * a user's ledger lines sum, per type, to the balance.
 */
export class Ledger {
  constructor(readonly storage: Storage) {}

  async account(userId: string): Promise<Account> {
    return accountOf(await this.storage.get<Partial<Account>>(ledgerKeys.account(userId)));
  }

  async balance(userId: string, type: BalanceType): Promise<number> {
    return (await this.account(userId))[type];
  }

  async balances(userId: string): Promise<Balances> {
    const a = await this.account(userId);
    return { subscription: a.subscription, one_time: a.one_time };
  }

  /** The whole ledger, oldest first (audits; histories read their own paged logs). */
  async entries(userId: string): Promise<LedgerEntry[]> {
    return (await this.storage.readLog<LedgerEntry>(ledgerKeys.log(userId))).map((e) => e.record);
  }

  /**
   * An entry made at `at`: the instant its operation keys its day and budget period by (taken
   * before the transaction, whose keys name the day's rows), so the entry, its history item and
   * the day row it is counted in always name the same UTC day, even when the transaction runs
   * after midnight.
   */
  newEntry(fields: Omit<LedgerEntry, 'id' | 'at'>, at: Date): LedgerEntry {
    return { id: randomUUID(), at: at.toISOString(), ...fields };
  }

  /**
   * Add tokens once per idempotency key. A replay with the same key and amount returns the
   * first result and changes nothing; the same key with a different amount or type is a CONFLICT.
   */
  async credit(p: CreditParams, claim?: CreditClaimOptions): Promise<CreditResult> {
    if (!Number.isSafeInteger(p.tokens) || p.tokens <= 0) {
      throw new CoreError('INVALID_PARAMS', 'tokens must be a positive integer');
    }
    const c = claim ?? {
      key: ledgerKeys.claim(p.userId, `credit:${p.idempotencyKey}`),
      fingerprint: `${p.type}:${p.tokens}`,
      conflictMessage: 'this idempotency key was already used with a different amount or type',
    };
    const accountKey = ledgerKeys.account(p.userId);
    return this.storage.transact<CreditResult>([accountKey, c.key], (read) => {
      const account = accountOf(read<Partial<Account>>(accountKey));
      const existing = read<CreditClaim>(c.key);
      if (existing) {
        if (existing.fp !== c.fingerprint) throw new CoreError('CONFLICT', c.conflictMessage);
        return { writes: [], result: { applied: false, entryId: existing.entryId, balance: account[p.type] } };
      }
      // Past 2^53 a number no longer counts every token: a credit of 1 would be "applied" and leave
      // the balance as it was. The lifetime total bounds both balances (they only shrink from it).
      if (
        account.purchased + p.tokens > Number.MAX_SAFE_INTEGER ||
        account.subscription + account.one_time + p.tokens > Number.MAX_SAFE_INTEGER
      ) {
        throw new CoreError(
          'BAD_REQUEST',
          `this credit would take the account past ${Number.MAX_SAFE_INTEGER} tokens, the most it can count exactly`,
          {
            details: { reason: 'balance_limit', limit: Number.MAX_SAFE_INTEGER },
          },
        );
      }
      const entry = this.newEntry(
        {
          kind: 'credit',
          idempotencyKey: p.idempotencyKey,
          lines: [{ type: p.type, delta: p.tokens }],
          source: p.source,
          ...(p.note ? { note: p.note } : {}),
        },
        new Date(),
      );
      const next: Account = {
        ...account,
        [p.type]: account[p.type] + p.tokens,
        purchased: account.purchased + p.tokens,
        purchases: account.purchases + 1,
        subscriptionPurchases: account.subscriptionPurchases + (p.type === 'subscription' ? 1 : 0),
      };
      const item: PurchaseItem = {
        id: entry.id,
        at: entry.at,
        type: p.type,
        tokens: p.tokens,
        source: p.source,
        ...(p.note ? { note: p.note } : {}),
      };
      const writes: TxWrite[] = [
        { op: 'set', key: accountKey, value: next },
        { op: 'set', key: c.key, value: { fp: c.fingerprint, entryId: entry.id, at: entry.at } satisfies CreditClaim },
        { op: 'append', log: ledgerKeys.log(p.userId), record: entry },
        { op: 'append', log: ledgerKeys.purchases(p.userId), record: item },
        { op: 'append', log: ledgerKeys.purchases(p.userId, p.type), record: item },
      ];
      return { writes, result: { applied: true, entryId: entry.id, balance: next[p.type] } };
    });
  }

  /**
   * Compare balances with the ledger sums (reads the whole ledger: for audits, not hot paths).
   * Archived lines count through the retention checkpoint's sums; lines at or below its
   * `throughSeq` still in the log (archived, not yet dropped) are not counted twice.
   */
  async audit(userId: string): Promise<AuditReport> {
    const cp = await this.storage.get<LedgerCheckpoint>(ledgerKeys.checkpoint(userId));
    const [balances, entries] = await Promise.all([
      this.balances(userId),
      this.storage.readLog<LedgerEntry>(ledgerKeys.log(userId), { after: cp?.throughSeq ?? 0 }),
    ]);
    const sums: Balances = { subscription: cp?.sums.subscription ?? 0, one_time: cp?.sums.one_time ?? 0 };
    for (const { record } of entries) for (const l of record.lines) sums[l.type] += l.delta;
    return { balances, sums, consistent: BALANCE_TYPES.every((t) => balances[t] === sums[t]) };
  }
}
