import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import type { TxWrite } from '../../kernel/Storage.js';
import { PostgresStorage } from './PostgresStorage.js';
import { SqliteStorage } from './SqliteStorage.js';
import type { SqliteDatabase, SqliteDriver } from './SqliteDriver.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * Every statement the SQL stores run is served by an index: the tables below grow with use
 * (balances, holds, keys, statistics day rows and every other record are `kv` rows; ledgers and
 * histories are `logs`), so a full scan of one of them is a query that slows down month after
 * month (issue 37). The statements are collected from the stores' own code paths, not from a list
 * kept by hand, so a statement added later is checked without touching this file:
 * - SQLite: every statement the store prepares, recorded by wrapping the driver's `prepare`
 *   (whichever driver loads), then `EXPLAIN QUERY PLAN`.
 * - PostgreSQL: auto_explain on every connection of the store's pool logs the plan of every
 *   statement executed, including those inside `aib_tx` (log_nested_statements) and the
 *   multi-statement texts of the locked paths; `enable_seqscan = off` makes the planner take an
 *   index wherever one can serve the query, so a sequential scan left in a plan means none can.
 */
const GROWING = new Set(['kv', 'logs', 'log_heads']);

/** SQL texts every SQLite database opened in this file prepared (hoisted: the mock below fills it). */
const prepared = vi.hoisted(() => new Set<string>());

vi.mock('./loadSqliteDriver.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('./loadSqliteDriver.js')>();
  const recordingDb = (db: SqliteDatabase): SqliteDatabase =>
    new Proxy(db, {
      get(target, prop) {
        if (prop === 'prepare') {
          return (sql: string) => {
            prepared.add(sql);
            return target.prepare(sql);
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return {
    ...actual,
    loadSqliteDriver: async (...args: Parameters<typeof actual.loadSqliteDriver>) => {
      const driver = await actual.loadSqliteDriver(...args);
      return new Proxy(driver, {
        get(target, prop) {
          if (prop === 'open') return (file: string) => recordingDb(target.open(file));
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      }) satisfies SqliteDriver;
    },
  };
});

/** The full scans of growing tables in one statement's EXPLAIN QUERY PLAN rows ("SCAN kv", "SCAN logs USING INDEX …"). */
function sqliteFullScans(db: SqliteDatabase, sql: string): string[] {
  // Unbound parameters are refused; NULLs plan the same (SQLite plans without the values).
  const params = new Array<null>((sql.match(/\?/g) ?? []).length).fill(null);
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
  // "SCAN t" reads every row; "SCAN t USING INDEX i" reads every entry of an index, just as much.
  // "SEARCH t USING …" is a lookup or a range; SCAN of a CTE, a constant row or a subquery is not a table.
  return rows.map((r) => r.detail).filter((d) => GROWING.has(/^SCAN (\w+)/.exec(d)?.[1] ?? ''));
}

describe.each(SQLITE_DRIVERS)('query plans: sqlite (%s)', (driver) => {
  let dir: string;
  let store: SqliteStorage;
  let db: SqliteDatabase;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'query-plans-'));
    prepared.clear();
    store = await SqliteStorage.open({ file: join(dir, 'data.db'), driver });
    db = (store as unknown as { db: SqliteDatabase }).db;
  });
  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the store prepared its statements through the recording driver', () => {
    // Without this the check below could pass on an empty list (a driver the mock missed).
    const texts = [...prepared].join('\n');
    for (const table of GROWING) expect(texts).toContain(table);
    expect(prepared.size).toBeGreaterThanOrEqual(10);
  });

  it('no statement it prepares scans a whole growing table', () => {
    const scans = [...prepared].flatMap((sql) => sqliteFullScans(db, sql).map((d) => `${d}  <-  ${sql}`));
    expect(scans).toEqual([]);
  });

  it('the check sees a full scan when there is one', () => {
    expect(sqliteFullScans(db, 'SELECT key FROM kv WHERE value = ?')).toEqual(['SCAN kv']);
    expect(sqliteFullScans(db, 'SELECT seq FROM logs WHERE record = ?')).toEqual(['SCAN logs']);
  });
});

const postgres = await testPostgres();

/** One node of a plan in auto_explain's / EXPLAIN's JSON format. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/**
 * The full scans of growing tables in a plan: a sequential scan, or an index scan without an
 * index condition (it reads every entry of the index: what `enable_seqscan = off` turns a
 * sequential scan into when a partial index's predicate follows from the query's).
 */
function pgFullScans(node: PlanNode): string[] {
  const type = node['Node Type'];
  const table = node['Relation Name'] ?? '';
  const own =
    type === 'Seq Scan' && GROWING.has(table)
      ? [`Seq Scan on ${table}`]
      : /^(Index Scan|Index Only Scan|Bitmap Index Scan)$/.test(type) &&
          node['Index Cond'] === undefined &&
          (GROWING.has(table) || type === 'Bitmap Index Scan')
        ? [`${type} without a condition on ${node['Index Name']}`]
        : [];
  return [...own, ...(node.Plans ?? []).flatMap(pgFullScans)];
}

/**
 * The plan of `text` prepared on `client` as `name(types)`, after `runs` executions with `args`
 * (PostgreSQL plans the first five with their values; from then on it keeps the generic plan
 * unless the custom ones were cheaper, and then a constant stays in the plan), as JSON text.
 */
async function preparedPlan(client: PoolClient, name: string, types: string, text: string, args: string, runs: number): Promise<string> {
  await client.query(`PREPARE ${name}(${types}) AS ${text}`);
  for (let i = 0; i < runs; i++) await client.query(`EXECUTE ${name}(${args})`);
  const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}(${args})`);
  return JSON.stringify(rows[0]!['QUERY PLAN'][0]!.Plan);
}

/** Per-session settings of every connection under observation (see the file comment). */
const OBSERVE = [
  "LOAD 'auto_explain'",
  'SET auto_explain.log_min_duration = 0',
  'SET auto_explain.log_nested_statements = on',
  "SET auto_explain.log_format = 'json'",
  "SET auto_explain.log_level = 'notice'",
  "SET client_min_messages = 'notice'",
  'SET enable_seqscan = off',
].join(';');

describe.skipIf(!postgres.ok)('query plans: postgres', () => {
  const plans: Array<{ query: string; plan: PlanNode }> = [];
  const stores: PostgresStorage[] = [];
  const schemaOpts = testPostgresOptions(postgres, 'plans');
  /** The sweeper's due-keys statement as the store sent it (recorded by the workload below). */
  const sweepStatement = () => plans.map((p) => p.query).find((q) => q.includes('ORDER BY due_at') && q.includes('left(key'));

  /** A store whose every connection logs each statement's plan into `plans`. */
  async function observedStore(): Promise<PostgresStorage> {
    const store = await PostgresStorage.connect(schemaOpts);
    stores.push(store);
    const pool = (store as unknown as { pool: Pool }).pool;
    const ready = new WeakSet<PoolClient>();
    // 'acquire' fires before the pool hands a client out (idle ones from the migration included),
    // and a client runs its queries in order: the settings go out before the store's statement.
    pool.on('acquire', (client: PoolClient) => {
      if (ready.has(client)) return;
      ready.add(client);
      client.on('notice', (msg) => {
        const at = msg.message?.indexOf('plan:') ?? -1;
        if (at < 0) return;
        const parsed = JSON.parse(msg.message!.slice(at + 'plan:'.length)) as { 'Query Text': string; Plan: PlanNode };
        plans.push({ query: parsed['Query Text'], plan: parsed.Plan });
      });
      void client
        .query(OBSERVE)
        .catch((err: Error) => plans.push({ query: `settings failed: ${err.message}`, plan: { 'Node Type': 'error' } }));
    });
    return store;
  }

  beforeAll(async () => {
    const a = await observedStore();
    const b = await observedStore();
    const now = Date.now();
    // Every operation of the Storage interface, each branch that sends different SQL.
    await a.set('acct:u1', { balance: 10 });
    await a.set('tmp:x', 1, { ttlMs: 60_000 });
    await a.get('acct:u1'); // single read
    await Promise.all([a.get('acct:u1'), a.get('prefs:u1')]); // same tick: one multi-key read
    await a.getMany(['acct:u1', 'tmp:x']);
    await a.compareAndSet('cas:1', undefined, 1); // set-if-absent
    await a.compareAndSet('cas:1', 1, 2); // compare then write
    await a.increment('ctr:1', 1); // upsert
    await a.increment('ctr:1', -5, { min: 0 }); // floor only an existing row can pass
    await a.keys('acct:');
    await a.listKeys('acct:', { limit: 10 }); // a page of keys (vault rotation, statistics reset)
    await a.listKeys('acct:', { cursor: 'acct:u0', limit: 10 });
    await a.append('ledger:u1', { delta: 1 });
    await a.readLog('ledger:u1');
    await a.readLog('ledger:u1', { newestFirst: true, limit: 5 });
    await a.readLog('ledger:u1', { after: 1, limit: 5 });
    await a.listLogs('ledger:', { limit: 10 }); // retention: logs by prefix, a page at a time
    await a.listLogs('ledger:', { cursor: 'ledger:u0', limit: 10 });
    const writes: TxWrite[] = [
      { op: 'set', key: 'hold:h1', value: { n: 1 }, dueAt: now + 1000 },
      { op: 'set', key: 'acct:u1', value: { balance: 9 } },
      { op: 'delete', key: 'tmp:x' },
      { op: 'append', log: 'ledger:u1', record: { delta: -1 } },
    ];
    await a.transact(['acct:u1', 'hold:h1', 'tmp:x'], () => ({ writes, result: undefined })); // optimistic aib_tx
    await a.transact(['acct:u1'], () => ({ writes: [{ op: 'set', key: 'acct:u1', value: { balance: 8 } }], result: undefined }), {
      durable: false,
    }); // aib_tx_async
    // Another instance writes the key: the next transaction's check fails, it reads afresh and
    // retries, and the key counts as contended, so the one after takes the batch's locked path.
    await b.set('acct:u1', { balance: 7 });
    await a.transact(['acct:u1'], (read) => ({
      writes: [{ op: 'set', key: 'acct:u1', value: { balance: (read<{ balance: number }>('acct:u1')?.balance ?? 0) - 1 } }],
      result: undefined,
    }));
    await a.transact(['acct:u1', 'tmp:y'], () => ({ writes: [...writes, { op: 'delete', key: 'tmp:y' }], result: undefined }));
    // A plan that writes nothing on a guess reads first (aib_tx_read); the single-transaction
    // locked path runs only after repeated lost races, so it is called directly.
    await a.transact(['acct:u1', 'nothing:here'], (read) => ({
      writes: read('nothing:here') === undefined ? [] : writes,
      result: undefined,
    }));
    await (
      a as unknown as {
        transactLocked(k: string[], p: () => { writes: TxWrite[]; result: undefined }, mode: 'durable' | 'async'): Promise<void>;
      }
    ).transactLocked(['acct:u1', 'hold:h1'], () => ({ writes, result: undefined }), 'async');
    await a.dueKeys('hold:', now + 5000, 10);
    await a.trimLog('ledger:u1', 1); // retention: a log's archived head
    await a.purgeExpired();
    await a.delete('cas:1');
    await a.health();
  }, 60_000);

  afterAll(async () => {
    for (const s of stores) await s.close();
    await dropTestSchema(postgres, schemaOpts.schema);
  });

  it("the plans of the store's statements were logged, inside aib_tx and on the locked paths too", () => {
    expect(plans.filter((p) => p.query.startsWith('settings failed'))).toEqual([]);
    const texts = plans.map((p) => p.query).join('\n');
    // The workload reached each path (a path missed here would be checked by nothing).
    for (const fragment of [
      'aib_tx(',
      'FROM unnest(p_keys, p_seen)',
      'DELETE FROM kv WHERE key = v_key',
      'INSERT INTO logs (log, seq, record) VALUES (p_logs[i]',
      'pg_advisory_xact_lock(hashtextextended(',
      'xmin::text AS v FROM kv WHERE key = ANY',
      'ORDER BY due_at',
      'ORDER BY seq DESC',
      'expires_at <=',
      'value::jsonb',
      'FROM log_heads WHERE log >=',
      'DELETE FROM logs WHERE log = $1 AND seq <=',
    ]) {
      expect(texts, fragment).toContain(fragment);
    }
  });

  it('no statement the store runs scans a whole growing table', () => {
    const scans = plans.flatMap((p) => pgFullScans(p.plan).map((s) => `${s}  <-  ${p.query.replace(/\s+/g, ' ').slice(0, 300)}`));
    expect([...new Set(scans)]).toEqual([]);
  });

  it("the sweeper's due keys are read from the due index alone, not the prefix's key range, after many settled holds", async () => {
    const store = stores[0]!;
    const pool = (store as unknown as { pool: Pool }).pool;
    const now = Date.now();
    // As after a fill: the statistics last saw many due rows and few holds; since then 3,000
    // holds were made and settled (deleted), dead rows in the primary key's range until a vacuum.
    const rows = async (prefix: string, op: 'set' | 'delete', dueAt: number) => {
      const keys = Array.from({ length: 3000 }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
      for (let i = 0; i < keys.length; i += 500)
        await store.transact([], () => ({
          writes: keys.slice(i, i + 500).map((key) => (op === 'set' ? { op, key, value: 1, dueAt } : { op, key })),
          result: undefined,
        }));
    };
    await rows('zdue:', 'set', now - 1000);
    await pool.query('ANALYZE kv');
    await rows('zdue:', 'delete', 0);
    await rows('hold:churn:', 'set', now + 900_000);
    await rows('hold:churn:', 'delete', 0);
    const seen = plans.length;
    await store.dueKeys('hold:', now, 200);
    const plan = plans.slice(seen).find((p) => p.query.includes('ORDER BY due_at'))?.plan;
    expect(plan).toBeDefined();
    const indexes = (n: PlanNode): string[] => [...(n['Index Name'] ? [n['Index Name']] : []), ...(n.Plans ?? []).flatMap(indexes)];
    expect(indexes(plan!)).toEqual(['kv_due_at']);
  });

  it("the store's sessions plan no JIT compilation and no parallel workers, whatever the server's defaults", async () => {
    const pool = (stores[0]! as unknown as { pool: Pool }).pool;
    const client = await pool.connect();
    try {
      const setting = async (name: string) =>
        (await client.query<{ setting: string }>('SELECT setting FROM pg_settings WHERE name = $1', [name])).rows[0]?.setting;
      expect(await setting('jit')).toBe('off');
      expect(await setting('max_parallel_workers_per_gather')).toBe('0');
      // Costs that make any scan look worth workers and compiling (what a stale estimate does at
      // millions of rows): the store's sessions still plan it without either.
      await client.query('BEGIN');
      for (const set of ['parallel_setup_cost = 0', 'parallel_tuple_cost = 0', 'min_parallel_table_scan_size = 0', 'jit_above_cost = 0'])
        await client.query(`SET LOCAL ${set}`);
      const { rows } = await client.query<{ 'QUERY PLAN': unknown }>('EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM kv');
      await client.query('ROLLBACK');
      const plan = JSON.stringify(rows[0]!['QUERY PLAN']);
      expect(plan).not.toContain('"Node Type":"Gather');
      expect(plan).not.toContain('"JIT"');
    } finally {
      client.release();
    }
  });

  it("the sweeper's statement runs on a cached generic plan once the table has statistics (no planning per sweep)", async () => {
    const store = stores[0]!;
    const pool = (store as unknown as { pool: Pool }).pool;
    const now = Date.now();
    // Statistics that saw many rows due later than now (open holds at a busy moment): for a
    // constant `now` the planner then expects almost no row, for an unknown one a third of them.
    for (let i = 0; i < 3000; i += 500)
      await store.transact([], () => ({
        writes: Array.from({ length: 500 }, (_, j) => ({
          op: 'set' as const,
          key: `zplan:${i + j}`,
          value: 1,
          dueAt: now + 600_000 + i + j,
        })),
        result: undefined,
      }));
    await pool.query('ANALYZE kv');
    // The statement as the store sends it: the one the workload above recorded.
    const text = sweepStatement();
    expect(text).toBeDefined();
    const client = await pool.connect();
    try {
      const plan = await preparedPlan(client, 'sweep_plan_check', 'bigint, text, int, int', text!, `${now}, 'hold:', 5, 200`, 6);
      expect(plan).toContain('kv_due_at');
      expect(plan).not.toContain(String(now));
    } finally {
      await client.query('DEALLOCATE ALL').catch(() => undefined);
      client.release();
    }
  });

  it("the sweeper's statement reads the due index in order when the statistics saw no row due (every due_at NULL)", async () => {
    // A quiet moment at ANALYZE (no call in flight, so no hold has a due time) on a big table:
    // the statement must still walk kv_due_at, never the table. With `due_at IS NOT NULL` in it,
    // the planner took that clause as matching no row, expected the index to return a third of
    // the table for `due_at <= (unknown)`, and chose a sequential scan and a sort: 0.9 s a sweep
    // at 10 M ledger rows (performance.md, "Growth of the durable stores").
    const opts = testPostgresOptions(postgres, 'plansnulldue');
    const store = await PostgresStorage.connect(opts);
    try {
      for (let i = 0; i < 40_000; i += 1000)
        await store.transact([], () => ({
          writes: Array.from({ length: 1000 }, (_, j) => ({ op: 'set' as const, key: `acct:u${i + j}`, value: { tokens: 1 } })),
          result: undefined,
        }));
      const pool = (store as unknown as { pool: Pool }).pool;
      await pool.query('ANALYZE kv');
      const text = sweepStatement();
      expect(text).toBeDefined();
      const client = await pool.connect();
      try {
        const now = Date.now();
        const plan = await preparedPlan(client, 'sweep_null_check', 'bigint, text, int, int', text!, `${now}, 'hold:', 5, 200`, 6);
        expect(plan).toContain('"Node Type":"Index Scan"');
        expect(plan).toContain('kv_due_at');
        expect(plan).not.toContain('Seq Scan');
        // The purge's batch, on the same statistics (no row with an expiry): the expiry index, in order.
        const purge = plans.map((p) => p.query).find((q) => q.startsWith('DELETE FROM kv WHERE key IN'));
        expect(purge).toBeDefined();
        // Not executed first: a run would delete.
        const purgePlan = await preparedPlan(client, 'purge_null_check', 'bigint, int', purge!, `${now}, 1000`, 0);
        expect(purgePlan).toContain('kv_expires_at');
        expect(purgePlan).not.toContain('Seq Scan');
      } finally {
        await client.query('DEALLOCATE ALL').catch(() => undefined);
        client.release();
      }
    } finally {
      await store.close();
      await dropTestSchema(postgres, opts.schema);
    }
  });

  it('the check sees a sequential scan when there is one', async () => {
    const pool = (stores[0] as unknown as { pool: Pool }).pool;
    const client = await pool.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        "EXPLAIN (FORMAT JSON) SELECT key FROM kv WHERE value = 'x'",
      );
      expect(pgFullScans(rows[0]!['QUERY PLAN'][0]!.Plan)).toEqual(['Seq Scan on kv']);
      const viaIndex = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        'EXPLAIN (FORMAT JSON) SELECT key FROM kv WHERE expires_at + 0 <= 5',
      );
      expect(pgFullScans(viaIndex.rows[0]!['QUERY PLAN'][0]!.Plan)).toEqual([
        expect.stringMatching(/Index Scan without a condition on kv_expires_at$/),
      ]);
    } finally {
      client.release();
    }
  });
});

describe.skipIf(!postgres.ok)('query plans: postgres, a young store (sequential scans allowed)', () => {
  const opts = testPostgresOptions(postgres, 'plansyoung');
  let store: PostgresStorage;
  afterAll(async () => {
    await store?.close();
    await dropTestSchema(postgres, opts.schema);
  });

  // The test above turns sequential scans off, which hid this: with 1,500 rows (a store after
  // about as many metered calls, as in the benches), migration 2's version check joined the keys
  // with kv as a hash join over a sequential scan of the whole table, on every transaction.
  it('aib_tx reads kv by key, not by scanning it, while the table holds a few thousand rows', async () => {
    store = await PostgresStorage.connect(opts);
    const pool = (store as unknown as { pool: Pool }).pool;
    const keys = Array.from({ length: 1500 }, (_, i) => `holddone:u1:${String(i).padStart(5, '0')}`);
    for (let i = 0; i < keys.length; i += 500)
      await store.transact([], () => ({
        writes: keys.slice(i, i + 500).map((key) => ({ op: 'set' as const, key, value: { state: 'settled' }, ttlMs: 3_600_000 })),
        result: undefined,
      }));
    const plans: Array<{ query: string; plan: PlanNode }> = [];
    const client = await pool.connect();
    try {
      client.on('notice', (msg) => {
        const at = msg.message?.indexOf('plan:') ?? -1;
        if (at < 0) return;
        const parsed = JSON.parse(msg.message!.slice(at + 'plan:'.length)) as { 'Query Text': string; Plan: PlanNode };
        plans.push({ query: parsed['Query Text'], plan: parsed.Plan });
      });
      await client.query(OBSERVE.replace(';SET enable_seqscan = off', ''));
    } finally {
      client.release();
    }
    // A metered call's hold and settle, a few times over (plpgsql plans a statement anew for its
    // first calls): seven keys each, as billing declares them, most of them absent.
    for (let i = 0; i < 12; i++) {
      const hold = `hold:u1:${i}`;
      const declared = ['acct:u1', 'budget:u1', 'budgetspend:u1', hold, `holddone:u1:${i}`, 'prefs:u1', 'vault:u1:openai'];
      await store.transact(declared, () => ({
        writes: [
          { op: 'set', key: 'acct:u1', value: { balance: 100 - i } },
          { op: 'set', key: hold, value: { n: i }, dueAt: Date.now() + 60_000 },
          { op: 'append', log: 'ledger:u1', record: { hold: i } },
        ],
        result: undefined,
      }));
      await store.transact(declared, () => ({
        writes: [
          { op: 'delete', key: hold },
          { op: 'set', key: 'acct:u1', value: { balance: 99 - i } },
          { op: 'set', key: `holddone:u1:${i}`, value: { state: 'settled' }, ttlMs: 3_600_000 },
        ],
        result: undefined,
      }));
    }
    const inside = plans.filter((p) => /p_keys|p_seen|p_delete_keys|v_key|p_set_keys/.test(p.query));
    expect(inside.some((p) => p.query.includes('p_seen'))).toBe(true); // the version check was observed
    const scans = inside.flatMap((p) => pgFullScans(p.plan).map((s) => `${s}  <-  ${p.query.replace(/\s+/g, ' ').slice(0, 200)}`));
    expect([...new Set(scans)]).toEqual([]);
  });
});
