import { randomUUID } from 'node:crypto';
import { testService } from './testService.js';
import { SERVICE_ENV } from './probeServices.js';

/** Where the test PostgreSQL answers (AI_BACKEND_TEST_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test). */
export interface TestPostgres {
  ok: boolean;
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
}

/**
 * The test PostgreSQL for this file (top-level await). When `ok` is false the file's postgres
 * suites skip (`describe.skipIf(!pg.ok)`) and the run's last line says so; CI
 * (AI_BACKEND_REQUIRE_SERVICES=1) fails instead.
 */
export async function testPostgres(): Promise<TestPostgres> {
  const status = await testService('postgres');
  const at = postgresAt(status.url);
  return { ok: status.ok, ...at, host: status.host ?? at.host, port: status.port ?? at.port };
}

/**
 * The connection a PostgreSQL URL names, without probing it (also outside vitest: the benches):
 * by default AI_BACKEND_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test.
 */
export function postgresAt(
  value = process.env[SERVICE_ENV.postgres] ?? 'postgres://postgres@127.0.0.1:5432/test',
): Omit<TestPostgres, 'ok'> {
  const url = new URL(value);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    database: url.pathname.slice(1) || 'test',
  };
}

/**
 * Connect options (the shape of core's `storage.postgres`) with a schema unique to this test
 * run: tests never see each other's rows, and `dropTestSchema` removes everything afterwards.
 * Timeouts are generous: a loaded test machine is not an outage.
 */
export function testPostgresOptions(pg: Omit<TestPostgres, 'ok'>, label = 'storage') {
  const schema = `t_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${randomUUID().slice(0, 8)}`.slice(0, 63);
  return {
    host: pg.host,
    port: pg.port,
    user: pg.user,
    ...(pg.password ? { password: pg.password } : {}),
    database: pg.database,
    schema,
    poolSize: 10,
    connectTimeoutMs: 5000,
    queryTimeoutMs: 10_000,
  };
}

/** A connection of its own to the test database (a dropped connection's error is not thrown at the process). */
async function connectTo(pg: Omit<TestPostgres, 'ok'>) {
  const { default: pgLib } = await import('pg');
  const client = new pgLib.Client({
    host: pg.host,
    port: pg.port,
    user: pg.user,
    password: pg.password,
    database: pg.database,
    connectionTimeoutMillis: 3000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** Drop a test schema and everything in it (refuses any schema these helpers did not name). */
export async function dropTestSchema(pg: Omit<TestPostgres, 'ok'>, schema: string): Promise<void> {
  if (!/^t_[a-z0-9_]+$/.test(schema)) throw new Error(`refusing to drop ${schema}: not a test schema`);
  const client = await connectTo(pg);
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Run SQL text (several statements allowed: the simple query protocol) on the test database, on
 * a connection of its own; returns the rows of the last statement. For loading dumps and
 * reading tables a test set up itself.
 */
export async function runTestSql(pg: Omit<TestPostgres, 'ok'>, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = await connectTo(pg);
  try {
    const result = await client.query(sql);
    const last = Array.isArray(result) ? result[result.length - 1] : result;
    return (last?.rows ?? []) as Array<Record<string, unknown>>;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Take the advisory lock PostgresStorage takes on `key` before a transaction on it, from a session
 * of its own: a transaction on that key then waits until `release()` (a store that is slow to
 * answer for one user's rows, on a real server). Advisory locks span the database, so name a key
 * no other suite uses.
 */
export async function holdStoreKeyLock(
  pg: Omit<TestPostgres, 'ok'>,
  key: string,
): Promise<{ release(): Promise<void>; waiting(): Promise<number> }> {
  const client = await connectTo(pg);
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return {
    // Ending the session gives its advisory locks back.
    release: () => client.end(),
    // Sessions waiting for the lock (a bigint advisory lock is classid and objid, its high and low halves).
    waiting: async () => {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
           AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`,
        [key],
      );
      return (rows[0] as { n: number }).n;
    },
  };
}
