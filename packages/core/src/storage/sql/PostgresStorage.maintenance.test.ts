import { afterAll, describe, expect, it } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createRuntime } from '../../createRuntime.js';
import { createLogger } from '../../kernel/Logger.js';
import { PostgresStorage } from './PostgresStorage.js';

/**
 * Autovacuum off (for the server, or for one of the store's tables) is said at start: `kv` gains a
 * dead row with every metered call, and at 10 M ledger rows without a vacuum the sweeper walked
 * 5 M dead index entries (docs/operations.md, "PostgreSQL: keep autovacuum on"). The server's own
 * setting is read as it is (this machine's PostgreSQL runs with it off, others with it on); a
 * table's setting is changed by the test on its own schema.
 */
const postgres = await testPostgres();

describe.skipIf(!postgres.ok)('PostgreSQL: maintenance warnings at start', () => {
  const opts = testPostgresOptions(postgres, 'maintenance');
  afterAll(() => dropTestSchema(postgres, opts.schema));

  it("names the server's autovacuum when it is off, and each store table where it is turned off", async () => {
    const store = await PostgresStorage.connect(opts);
    try {
      const pool = (store as unknown as { pool: { query: <R>(t: string) => Promise<{ rows: R[] }> } }).pool;
      const server = (await pool.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum;
      const serverWarning = expect.objectContaining({ message: expect.stringContaining('PostgreSQL runs with autovacuum off') });
      const before = await store.maintenanceWarnings();
      expect(before).toEqual(server === 'on' ? [] : [serverWarning]);

      await pool.query('ALTER TABLE kv SET (autovacuum_enabled = off)');
      await pool.query('ALTER TABLE logs SET (autovacuum_enabled = false)');
      const after = await store.maintenanceWarnings();
      const tables = after.find((w) => w.message.includes('for the store'));
      expect(tables?.message).toContain('tables kv, logs (autovacuum_enabled = false)');
      expect(tables?.fix).toContain(`vacuumdb --analyze --schema=${opts.schema}`);

      await pool.query('ALTER TABLE kv RESET (autovacuum_enabled)');
      await pool.query('ALTER TABLE logs RESET (autovacuum_enabled)');
      expect(await store.maintenanceWarnings()).toEqual(before);
    } finally {
      await store.close();
    }
  });

  it('the server logs them as warnings when it starts on the store', async () => {
    const store = await PostgresStorage.connect(opts);
    const pool = (store as unknown as { pool: { query: (t: string) => Promise<unknown> } }).pool;
    await pool.query('ALTER TABLE log_heads SET (autovacuum_enabled = false)');
    await store.close();
    const lines: string[] = [];
    const rt = await createRuntime(resolveConfig({ storage: { type: 'postgres', postgres: opts } }), {
      logger: createLogger('warn', (l) => lines.push(l)),
    });
    await rt.close();
    const warned = lines
      .map((l) => JSON.parse(l) as { level: string; msg: string; fix?: string })
      .filter((l) => l.msg.includes('autovacuum'));
    expect(warned).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        msg: expect.stringContaining('table log_heads'),
        fix: expect.stringContaining('VACUUM (ANALYZE)'),
      }),
    );
  });
});
