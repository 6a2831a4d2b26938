import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../kernel/Storage.js';
import { createStorage } from '../createStorage.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { SqliteStorage } from './SqliteStorage.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * `storage.sqlite.synchronous` reaches SQLite on each driver that loads on this Node (node:sqlite
 * on 22.13+, better-sqlite3 where its binary loads; CI runs this on 20, 22, 24 and 26): the pragma
 * is read back from the store's own connection, through the config as a user writes it. And a
 * non-durable transaction (`durable: false`, TransactOptions) does not weaken it: it waits for the
 * next commit (docs/storage.md, "Non-durable transactions"), which on `'full'` is fsynced too.
 */
const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-sync-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('at least one driver loads here', () => {
  expect(SQLITE_DRIVERS.length).toBeGreaterThan(0);
});

describe.each(SQLITE_DRIVERS)('SQLite on %s', (driver) => {
  const file = (name: string) => join(dir, `${driver.replace(/\W/g, '-')}-${name}.db`);

  it("storage.sqlite.synchronous: 'full' is applied; the default is 'normal'", async () => {
    for (const [synchronous, expected] of [
      ['full', 'full'],
      ['normal', 'normal'],
      [undefined, 'normal'],
    ] as const) {
      const config = resolveConfig({
        storage: {
          type: 'sqlite',
          sqlite: { file: file(`config-${synchronous ?? 'default'}`), driver, ...(synchronous ? { synchronous } : {}) },
        },
      });
      const store = await createStorage(config.storage);
      try {
        expect(store).toBeInstanceOf(SqliteStorage);
        const sqlite = store as SqliteStorage;
        expect(sqlite.driver).toBe(driver);
        expect(sqlite.synchronousMode(), `synchronous: ${synchronous ?? '(default)'}`).toBe(expected);
      } finally {
        await store.close();
      }
    }
  });

  it("a durable: false transaction leaves 'full' in force and is in the file after the store closes", async () => {
    const path = file('durable');
    const sqlite = await SqliteStorage.open({ file: path, synchronous: 'full', driver });
    const store: Storage = sqlite;
    await store.transact(['hold'], () => ({ writes: [{ op: 'set', key: 'hold', value: { tokens: 7 } }], result: null }), {
      durable: false,
    });
    expect(sqlite.synchronousMode()).toBe('full');
    await store.transact(['hold'], (read) => ({
      writes: [{ op: 'set', key: 'hold', value: { tokens: (read<{ tokens: number }>('hold')?.tokens ?? 0) + 1 } }],
      result: null,
    }));
    expect(sqlite.synchronousMode()).toBe('full');
    await store.close();
    const again = await SqliteStorage.open({ file: path, driver });
    expect(await again.get('hold')).toEqual({ tokens: 8 });
    // Per connection, not in the file: reopened without the option it is the default again.
    expect(again.synchronousMode()).toBe('normal');
    await again.close();
  });
});
