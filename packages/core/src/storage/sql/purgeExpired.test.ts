import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import type { Storage } from '../../kernel/Storage.js';
import { PURGE_BATCH } from './migrations.js';
import { PostgresStorage } from './PostgresStorage.js';
import { SqliteStorage } from './SqliteStorage.js';
import { recordQueries } from './__tests__/recordQueries.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * The purge of expired rows (every 5 minutes on each instance) deletes in batches: after a long
 * stop it may find a day of expired claims and rate-limit windows, and one statement over all of
 * them would hold SQLite's one writer (every metered call waits) or a long PostgreSQL transaction.
 * Rows that have not expired, or have no expiry, stay.
 */
const EXPIRED = PURGE_BATCH * 3 + 250;
const TTL_MS = 60_000;
/** The purge runs as if this much time had passed since the rows were written. */
const LATER = () => Date.now() + 2 * TTL_MS;

async function fill(store: Storage): Promise<void> {
  const keys = Array.from({ length: EXPIRED }, (_, i) => `rl:window:${i}`);
  for (let i = 0; i < keys.length; i += 250) await Promise.all(keys.slice(i, i + 250).map((key) => store.set(key, 1, { ttlMs: TTL_MS })));
  await store.set('acct:kept', { tokens: 5 });
  await store.set('claim:later', { at: 1 }, { ttlMs: 24 * 3600_000 });
}

async function expectKept(store: Storage): Promise<void> {
  expect(await store.get('acct:kept')).toEqual({ tokens: 5 });
  expect(await store.get('claim:later')).toEqual({ at: 1 });
}

const dir = await mkdtemp(join(tmpdir(), 'ai-backend-purge-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe.each(SQLITE_DRIVERS)('SQLite on %s: purgeExpired', (driver) => {
  it('deletes every expired row in batches, serving the event loop between them, and keeps the rest', async () => {
    const store = await SqliteStorage.open({ file: join(dir, `${driver.replace(/\W/g, '-')}.db`), driver });
    try {
      await fill(store);
      let finished = false;
      const purge = store.purgeExpired(LATER()).then((n) => {
        finished = true;
        return n;
      });
      // A callback queued now runs while the purge is still going: it yields between batches.
      const servedDuring = await new Promise<boolean>((resolve) => setImmediate(() => resolve(!finished)));
      expect(servedDuring).toBe(true);
      expect(await purge).toBe(EXPIRED);
      expect(await store.purgeExpired(LATER())).toBe(0);
      await expectKept(store);
    } finally {
      await store.close();
    }
  });
});

const postgres = await testPostgres();
describe.skipIf(!postgres.ok)('PostgreSQL: purgeExpired', () => {
  const opts = testPostgresOptions(postgres, 'purge');
  afterAll(() => dropTestSchema(postgres, opts.schema));

  it('deletes every expired row in batches of PURGE_BATCH, one statement each, and keeps the rest', async () => {
    const store = await PostgresStorage.connect(opts);
    try {
      await fill(store);
      // The purge's statements, as the pg driver sends them.
      const recorder = recordQueries();
      try {
        expect(await store.purgeExpired(LATER())).toBe(EXPIRED);
      } finally {
        recorder.stop();
      }
      const deletes = recorder.sent.filter((q) => q.text.startsWith('DELETE FROM kv'));
      // Three full batches, then the rest: one statement per batch.
      expect(deletes).toHaveLength(Math.ceil(EXPIRED / PURGE_BATCH));
      expect(await store.purgeExpired(LATER())).toBe(0);
      await expectKept(store);
    } finally {
      await store.close();
    }
  });
});
