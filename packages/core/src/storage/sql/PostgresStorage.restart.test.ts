import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { startPrivatePostgres, testService } from '@ai-backend/test-utils/services';
import type { TxPlan, TxRead } from '../../kernel/Storage.js';
import { PostgresStorage } from './PostgresStorage.js';

// Through the shared detection: under AI_BACKEND_REQUIRE_SERVICES=1 a missing binary fails the run.
const pgServer = await testService('postgres-server');

/** Add `delta` to the counter row `key` (a balance, as billing's account row is). */
const add =
  (key: string, delta: number) =>
  (read: TxRead): TxPlan<number> => {
    const n = (read<{ n: number }>(key)?.n ?? 0) + delta;
    return { writes: [{ op: 'set', key, value: { n } }], result: n };
  };

/**
 * The optimistic transaction proves its guess by the row version (`xmin`) it planned on. A crash
 * of PostgreSQL loses the last commits that no flush covered (a hold is committed with
 * synchronous_commit = off), and with them the transaction ids they used: after recovery
 * PostgreSQL hands those ids out again. A row another instance then writes can carry the very
 * `xmin` this process remembers for a row the crash took away, and a check of versions alone
 * passes on a value the store no longer holds.
 */
describe.skipIf(!pgServer.ok)('PostgreSQL restarted: row versions learnt before the restart', () => {
  let server: Awaited<ReturnType<typeof startPrivatePostgres>>;
  let a: PostgresStorage | undefined;
  let b: PostgresStorage | undefined;
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await server?.close();
  });

  const open = () =>
    PostgresStorage.connect({
      host: server.host,
      port: server.port,
      user: server.user,
      database: server.database,
      schema: 'restart',
      connectTimeoutMs: 5000,
      queryTimeoutMs: 10_000,
    });
  const pool = (s: PostgresStorage) => (s as unknown as { pool: import('pg').Pool }).pool;

  it('a row written after recovery under a reused transaction id is not taken for the one remembered', { timeout: 60_000 }, async () => {
    a = await open();
    b = await open();
    await pool(a).query("ALTER SYSTEM SET wal_writer_delay = '10s'");
    await pool(a).query('SELECT pg_reload_conf()');
    expect(await a.transact(['acct'], add('acct', 100))).toBe(100); // durable: survives the crash
    await new Promise((r) => setTimeout(r, 500)); // the WAL writer's last short sleep ends
    // Instance A's non-durable write (a hold): acknowledged, remembered with its row version.
    expect(await a.transact(['acct'], add('acct', -50), { durable: false })).toBe(50);
    const lost = (await pool(a).query<{ x: string }>("SELECT xmin::text AS x FROM kv WHERE key = 'acct'")).rows[0]!.x;
    await server.stop();
    await server.start();
    for (const s of [a, b])
      await waitFor(async () => (await s.health()).ok && (await s.get('probe')) === undefined, {
        timeoutMs: 20_000,
        what: 'PostgreSQL back',
      });
    expect(await b.get('acct')).toEqual({ n: 100 }); // the crash took the hold away

    // Instance B credits the account: after recovery, its transaction gets the id the lost one had.
    expect(await b.transact(['acct'], add('acct', 1000))).toBe(1100);
    const now = (await pool(b).query<{ x: string }>("SELECT xmin::text AS x FROM kv WHERE key = 'acct'")).rows[0]!.x;
    expect(now).toBe(lost); // the precondition of the race this test is about

    // Instance A settles: it must plan on 1100, not on the 50 it remembers from before the crash.
    expect(await a.transact(['acct'], add('acct', -10))).toBe(1090);
    expect(await b.get('acct')).toEqual({ n: 1090 });
  });
});
