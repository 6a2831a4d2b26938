import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { PostgresStorage } from './PostgresStorage.js';

/**
 * Transactions on PostgreSQL plan against what the process last saw and check it at commit.
 * These tests pin the two promises of that design: a hot key costs one round trip per
 * transaction, and a value changed by another instance is never planned against unnoticed.
 */
const postgres = await testPostgres();

/** Counts queries sent by any pg client of this process (each is one round trip). */
function countQueries(): { readonly n: number; stop(): void } {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const counter = { n: 0, stop: () => (proto.query = original) };
  proto.query = function (this: unknown, ...args: unknown[]) {
    counter.n++;
    return original.apply(this, args);
  };
  return counter;
}

type Account = { tokens: number };
const spend = (storage: PostgresStorage, user: string, amount: number, requestId: string) =>
  storage.transact([`acct:${user}`, `hold:${user}:${requestId}`], (read) => {
    const account = read<Account>(`acct:${user}`) ?? { tokens: 0 };
    if (account.tokens < amount) throw new Error('insufficient');
    return {
      writes: [
        { op: 'set', key: `acct:${user}`, value: { tokens: account.tokens - amount } },
        { op: 'set', key: `hold:${user}:${requestId}`, value: { amount } },
        { op: 'append', log: `ledger:${user}`, record: { requestId, delta: -amount } },
      ],
      result: account.tokens - amount,
    };
  });
const credit = (storage: PostgresStorage, user: string, amount: number) =>
  storage.transact([`acct:${user}`], (read) => {
    const account = read<Account>(`acct:${user}`) ?? { tokens: 0 };
    return { writes: [{ op: 'set', key: `acct:${user}`, value: { tokens: account.tokens + amount } }], result: account.tokens + amount };
  });

describe.skipIf(!postgres.ok)('PostgresStorage transactions', () => {
  const opts = testPostgresOptions(postgres, 'pgtx');
  let a: PostgresStorage;
  let b: PostgresStorage;
  beforeAll(async () => {
    a = await PostgresStorage.connect(opts);
    b = await PostgresStorage.connect(opts);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropTestSchema(postgres, opts.schema);
  });

  it('a transaction on a key this process wrote last is one round trip', async () => {
    await credit(a, 'hot', 1000);
    await spend(a, 'hot', 1, 'warm'); // the account row is now known to this process
    const counter = countQueries();
    try {
      for (let i = 0; i < 10; i++) await spend(a, 'hot', 1, `r${i}`);
    } finally {
      counter.stop();
    }
    expect(counter.n).toBe(10);
    expect(await a.get<Account>('acct:hot')).toEqual({ tokens: 989 });
  });

  it('another instance changing a key is seen: nothing is planned against a stale value', async () => {
    await credit(a, 'shared', 10);
    expect(await credit(b, 'shared', 5)).toBe(15); // b changed it behind a's back
    expect(await spend(a, 'shared', 15, 'all')).toBe(0); // a's cached 10 would have refused this
    expect(await credit(b, 'shared', 1)).toBe(1);
    expect(await credit(a, 'shared', 1)).toBe(2);
    const ledger = await a.readLog<{ delta: number }>('ledger:shared');
    expect(ledger.map((e) => e.record.delta)).toEqual([-15]);
  });

  it('concurrent spends from two instances on one hot account never overdraw it', async () => {
    await credit(a, 'race', 50);
    const attempts = Array.from({ length: 200 }, (_, i) => spend(i % 2 ? a : b, 'race', 1, `q${i}`).then(() => true, () => false));
    const ok = (await Promise.all(attempts)).filter(Boolean).length;
    expect(ok).toBe(50);
    expect(await b.get<Account>('acct:race')).toEqual({ tokens: 0 });
    expect(await a.readLog('ledger:race')).toHaveLength(50);
  });

  it('a refusal decided on a stale guess is re-decided on a fresh read', async () => {
    await credit(a, 'late', 0);
    await credit(b, 'late', 3); // a still believes 0
    expect(await spend(a, 'late', 3, 'x')).toBe(0);
  });
});
