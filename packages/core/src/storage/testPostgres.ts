import { randomUUID } from 'node:crypto';
import type { PostgresStorageOptions } from './sql/PostgresStorage.js';

/**
 * The PostgreSQL every test uses: 127.0.0.1:5432, database `test` (.ci/run starts the cluster when
 * it does not answer). Each test run gets its own schema, dropped afterwards, so parallel runs
 * never see each other's rows. Tests on the postgres backend call requireTestPostgres() first,
 * so a missing server fails them with a clear message (the one place to change that policy).
 */
export const TEST_POSTGRES = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'root', database: 'test' } as const;

/** Connect options with a schema unique to this test run. */
export function testPostgresOptions(label = 'storage'): PostgresStorageOptions & { schema: string } {
  const schema = `t_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${randomUUID().slice(0, 8)}`.slice(0, 63);
  return { ...TEST_POSTGRES, schema, poolSize: 10, connectTimeoutMs: 5000, queryTimeoutMs: 10_000 };
}

async function client() {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ ...TEST_POSTGRES, connectionTimeoutMillis: 3000 });
  c.on('error', () => undefined);
  return c;
}

/** Throw (never skip) when the test PostgreSQL does not answer. */
export async function requireTestPostgres(): Promise<void> {
  const c = await client();
  try {
    await c.connect();
    await c.query('SELECT 1');
  } catch (err) {
    throw new Error(
      `The test PostgreSQL at ${TEST_POSTGRES.host}:${TEST_POSTGRES.port} (database ${TEST_POSTGRES.database}) did not answer (${(err as Error).message}). ` +
        'Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start (.ci/run does this).',
    );
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Drop a test schema and everything in it. */
export async function dropTestSchema(schema: string): Promise<void> {
  if (!/^t_[a-z0-9_]+$/.test(schema)) throw new Error(`refusing to drop ${schema}: not a test schema`);
  const c = await client();
  try {
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end().catch(() => undefined);
  }
}
