import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import type { TxPlan, TxRead } from '../../kernel/Storage.js';
import type { BatchJob } from '../GroupCommit.js';
import { PostgresStorage } from './PostgresStorage.js';
import { recordQueries } from './__tests__/recordQueries.js';

/**
 * `transact(…, { durable: false })` on PostgreSQL: the transaction is committed with
 * `synchronous_commit = off` on each path it can take (the group-commit batch, its own optimistic
 * call, the locked paths), and a batch goes out that way only when every member allows it. That
 * PostgreSQL then really may lose it is shown on a crashed private cluster in
 * services/billing/lostHold.test.ts.
 */
const postgres = await testPostgres();

const SYNC_OFF = /set_config\('synchronous_commit', 'off', true\)|SET LOCAL synchronous_commit = off/;
/** The `aib_tx` calls among the recorded queries: true for each one sent non-durable. */
const txCalls = (sent: Array<{ text: string }>) => sent.filter((q) => q.text.includes('aib_tx(')).map((q) => SYNC_OFF.test(q.text));
const put = (key: string, value: unknown) => (): TxPlan<string> => ({ writes: [{ op: 'set', key, value }], result: key });

describe.skipIf(!postgres.ok)('PostgresStorage: non-durable transactions', () => {
  const opts = testPostgresOptions(postgres, 'pgdurable');
  let store: PostgresStorage;
  let recorder: ReturnType<typeof recordQueries> | undefined;
  beforeAll(async () => {
    store = await PostgresStorage.connect(opts);
  });
  afterEach(() => recorder?.stop());
  afterAll(async () => {
    await store?.close();
    await dropTestSchema(postgres, opts.schema);
  });

  it('a durable transaction is committed as before; durable: false turns synchronous_commit off for it', async () => {
    recorder = recordQueries();
    await store.transact(['d:1'], put('d:1', 1));
    await store.transact(['d:2'], put('d:2', 2), { durable: true });
    await store.transact(['a:1'], put('a:1', 1), { durable: false });
    expect(txCalls(recorder.sent)).toEqual([false, false, true]);
    // The setting lives only as long as that transaction: the connection's own stays on.
    const pool = (store as unknown as { pool: pg.Pool }).pool;
    expect((await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]?.synchronous_commit).toBe('on');
    expect(await store.getMany(['d:1', 'd:2', 'a:1'])).toEqual([1, 2, 1]);
  });

  it('a batch is non-durable only when all of its transactions are', async () => {
    recorder = recordQueries();
    // Submitted in one tick: each pair goes out as one batch (one aib_tx call).
    await Promise.all([store.transact(['m:1'], put('m:1', 1), { durable: false }), store.transact(['m:2'], put('m:2', 2))]);
    await Promise.all([
      store.transact(['n:1'], put('n:1', 1), { durable: false }),
      store.transact(['n:2'], put('n:2', 2), { durable: false }),
    ]);
    expect(txCalls(recorder.sent)).toEqual([false, true]);
    expect(await store.getMany(['m:1', 'm:2', 'n:1', 'n:2'])).toEqual([1, 2, 1, 2]);
  });

  it('the locked paths (after lost races) set it too, and only for non-durable transactions', async () => {
    // Private paths, taken here directly: losing races on purpose takes another instance and luck.
    const locked = store as unknown as {
      transactLocked<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>, mode: 'durable' | 'async'): Promise<R>;
      runBatchLocked(jobs: BatchJob[]): Promise<void>;
    };
    const job = (key: string, commit: 'durable' | 'async') =>
      new Promise<unknown>(
        (resolve, reject) => void locked.runBatchLocked([{ keys: [key], plan: put(key, key), commit, resolve, reject }]),
      );
    recorder = recordQueries();
    await locked.transactLocked(['l:1'], put('l:1', 'l:1'), 'async');
    await locked.transactLocked(['l:2'], put('l:2', 'l:2'), 'durable');
    await job('l:3', 'async');
    await job('l:4', 'durable');
    const begins = recorder.sent.filter((q) => q.text.startsWith('BEGIN;')).map((q) => SYNC_OFF.test(q.text));
    expect(begins).toEqual([true, false, true, false]);
    expect(await store.getMany(['l:1', 'l:2', 'l:3', 'l:4'])).toEqual(['l:1', 'l:2', 'l:3', 'l:4']);
  });

  it('a counter with an expiry is committed with synchronous_commit off; one without stays durable', async () => {
    // What each increment statement's RETURNING evaluated, in the statement that commits: the
    // `commit_mode` column is set_config's answer, the setting in force at that commit.
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const modes: string[] = [];
    proto.query = function (this: unknown, ...args: unknown[]) {
      const cb = args[args.length - 1];
      if (typeof cb === 'function')
        args[args.length - 1] = (err: unknown, res: { rows?: Array<{ commit_mode?: string }> }) => {
          for (const r of res?.rows ?? []) if (r.commit_mode !== undefined) modes.push(r.commit_mode);
          return (cb as (...a: unknown[]) => unknown)(err, res);
        };
      return original.apply(this, args);
    };
    try {
      expect(await store.increment('rl:w', 1, { ttlMs: 60_000 })).toBe(1); // created with an expiry
      expect(await store.increment('rl:w', 2)).toBe(3); // the row has one: still a window
      expect(await store.increment('rl:w', -3, { min: 0 })).toBe(0); // a decrement of it too
      expect(await store.increment('total', 5)).toBe(5); // no expiry: durable
      expect(await store.increment('total', -1, { min: 0 })).toBe(4);
      expect(await store.increment('total', -10, { min: 0 })).toBeNull(); // refused: nothing committed
    } finally {
      proto.query = original;
    }
    expect(modes).toEqual(['off', 'off', 'off', 'on', 'on']);
    // set_config(…, true) lasts until the statement's commit: the connection's own setting stays on.
    const pool = (store as unknown as { pool: pg.Pool }).pool;
    expect((await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]?.synchronous_commit).toBe('on');
  });
});
