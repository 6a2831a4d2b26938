import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { SCHEMA_VERSION } from './migrations.js';
import { PostgresStorage, type PostgresStorageOptions } from './PostgresStorage.js';

/** A plain connection to the test database, beside the store's pool. */
const rawClient = (o: PostgresStorageOptions) =>
  new pg.Client({
    connectionString: o.connectionString,
    host: o.host,
    port: o.port,
    user: o.user,
    password: o.password,
    database: o.database,
  });

const postgres = await testPostgres();

describe.skipIf(!postgres.ok)('PostgreSQL schema version while running', () => {
  const opened: Array<{ store: PostgresStorage; schema: string }> = [];
  afterEach(async () => {
    for (const { store, schema } of opened.splice(0)) {
      await store.close();
      await dropTestSchema(postgres, schema);
    }
  });

  async function open(schemaCheckMs: number) {
    const opts = { ...testPostgresOptions(postgres, 'schemacheck'), schemaCheckMs };
    const store = await PostgresStorage.connect(opts);
    opened.push({ store, schema: opts.schema! });
    return { store, opts };
  }

  /** What a newer release's start does to the schema: records a migration this release does not know. */
  async function migrateAsNewer(opts: PostgresStorageOptions, version: number): Promise<void> {
    const client = rawClient(opts);
    await client.connect();
    try {
      await client.query(`INSERT INTO ${opts.schema}.schema_migrations (version, name, applied_at) VALUES ($1, 'newer', 'now')`, [version]);
    } finally {
      await client.end();
    }
  }

  it('a newer release migrating the schema while this one runs: every call answers 503 saying why, health is down', async () => {
    const { store, opts } = await open(50);
    await store.set('k', 1);
    expect(await store.get('k')).toBe(1);
    await migrateAsNewer(opts, SCHEMA_VERSION + 1);
    await waitFor(async () => !(await store.health()).ok, { timeoutMs: 3000, intervalMs: 20, what: 'health down after the newer schema' });
    expect((await store.health()).detail).toMatch(
      new RegExp(
        `written by a newer release of ai-backend \\(schema version ${SCHEMA_VERSION + 1}; this release knows up to ${SCHEMA_VERSION}\\)`,
      ),
    );
    for (const call of [
      store.get('k'),
      store.getMany(['k']),
      store.set('k', 2),
      store.append('log', { a: 1 }),
      store.transact(['k'], () => ({ writes: [{ op: 'set', key: 'k', value: 3 }], result: null })),
    ]) {
      await expect(call).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: expect.stringMatching(/newer release/) });
    }
    // Nothing this release wrote after the newer schema changed.
    const client = rawClient(opts);
    await client.connect();
    try {
      expect((await client.query(`SELECT value FROM ${opts.schema}.kv WHERE key = 'k'`)).rows[0]?.value).toBe('1');
    } finally {
      await client.end();
    }
  });

  it("a store at this release's version stays up through its checks", async () => {
    const { store, opts } = await open(50);
    const client = rawClient(opts);
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT max(version) AS v FROM ${opts.schema}.schema_migrations`);
      expect(Number(rows[0].v)).toBe(SCHEMA_VERSION);
    } finally {
      await client.end();
    }
    // A deliberate pause: several 50 ms checks run (asserting none takes the store down).
    await new Promise((r) => setTimeout(r, 200));
    expect(await store.health()).toEqual({ ok: true });
    await store.set('k', 1);
    expect(await store.get('k')).toBe(1);
  });
});
