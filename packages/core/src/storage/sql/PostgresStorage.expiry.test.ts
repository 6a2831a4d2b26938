import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { dropTestSchema, runTestSql, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import type { TxWrite } from '../../kernel/Storage.js';
import { PostgresStorage } from './PostgresStorage.js';

/**
 * A transaction's rewrite of a live row keeps the row's expiry when the new one is within 1/256 of
 * a TTL of an hour or more (migration 5's `aib_tx` and the batch's and locked path's SQL, as
 * SQLite does in process: keepsExpiry). Day rows and spend windows are rewritten by every metered
 * call; a changed expires_at made every such update a non-HOT one (new entries in two indexes).
 * The expiry is read from the table; the clock is faked (Date only).
 */
const postgres = await testPostgres();
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 30, 12);

describe.skipIf(!postgres.ok)('PostgresStorage: a rewritten row keeps its expiry within TTL/256', () => {
  const opts = testPostgresOptions(postgres, 'pgexpiry');
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
  afterEach(() => vi.useRealTimers());

  const expiry = async (key: string) => {
    const rows = await runTestSql(postgres, `SELECT expires_at FROM "${opts.schema}".kv WHERE key = '${key}'`);
    return rows[0] ? Number(rows[0].expires_at) : undefined;
  };
  const write = (store: PostgresStorage, writes: TxWrite[]) =>
    store.transact(
      writes.map((w) => (w.op === 'append' ? w.log : w.key)),
      () => ({ writes, result: null }),
    );
  /** Add one to a counter row with a TTL, read in the transaction (as a day row is). */
  const bump = (store: PostgresStorage, key: string, ttlMs: number) =>
    store.transact([key], (read) => {
      const next = (read<number>(key) ?? 0) + 1;
      return { writes: [{ op: 'set', key, value: next, ttlMs }], result: next };
    });

  it('kept within TTL/256 of a long TTL; moved past it, for a short TTL, or when the row had expired', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    await write(a, [
      { op: 'set', key: 'day', value: 1, ttlMs: 400 * DAY },
      { op: 'set', key: 'short', value: 1, ttlMs: 60_000 },
      { op: 'set', key: 'hour', value: 1, ttlMs: 3_600_000 },
    ]);
    // An hour on: 400 days / 256 is 37.5 h, so the day row keeps its expiry; a minute window moves.
    vi.setSystemTime(T0 + 3_600_000);
    await write(a, [
      { op: 'set', key: 'day', value: 2, ttlMs: 400 * DAY },
      { op: 'set', key: 'short', value: 2, ttlMs: 60_000 },
    ]);
    expect(await expiry('day')).toBe(T0 + 400 * DAY);
    expect(await expiry('short')).toBe(T0 + 3_600_000 + 60_000);
    // The hour row expired a millisecond ago: written anew, with the new expiry.
    vi.setSystemTime(T0 + 3_600_001);
    await write(a, [{ op: 'set', key: 'hour', value: 2, ttlMs: 3_600_000 }]);
    expect(await expiry('hour')).toBe(T0 + 3_600_001 + 3_600_000);
    // Two days on: past 37.5 h, the expiry moves.
    vi.setSystemTime(T0 + 2 * DAY);
    await write(a, [{ op: 'set', key: 'day', value: 3, ttlMs: 400 * DAY }]);
    expect(await expiry('day')).toBe(T0 + 2 * DAY + 400 * DAY);
    expect(await a.get('day')).toBe(3);
  });

  it('on every path two instances take on one row (batches, checks lost, locked retries): kept, and no write lost', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    expect(await bump(a, 'shared-day', 400 * DAY)).toBe(1);
    for (let round = 1; round <= 5; round++) {
      // A minute later each round: every write would move the expiry if it were not kept.
      vi.setSystemTime(T0 + round * 60_000);
      await Promise.all(Array.from({ length: 16 }, (_, i) => bump(i % 2 ? a : b, 'shared-day', 400 * DAY)));
    }
    expect(await a.get('shared-day')).toBe(1 + 5 * 16);
    expect(await expiry('shared-day')).toBe(T0 + 400 * DAY);
  });
});
