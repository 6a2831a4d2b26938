import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { TxWrite } from '../../kernel/Storage.js';
import { SqliteStorage } from './SqliteStorage.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * The store reads a transaction's keys from what it last read or wrote (KnownRows) before SQLite.
 * That is exact only while every change of `kv` goes through what it knows: these are the ways it
 * could go stale, each read back from a reopened file.
 */
const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-known-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

const DAY = 86_400_000;

describe.each(SQLITE_DRIVERS)('SQLite on %s: the rows it knows', (driver) => {
  let n = 0;
  const newFile = () => join(dir, `${driver.replace(/\W/g, '-')}-${n++}.db`);
  const tx = (store: SqliteStorage, keys: string[], writes: TxWrite[]) => store.transact(keys, () => ({ writes, result: null }));
  const readIn = (store: SqliteStorage, key: string) => store.transact([key, 'other'], (read) => ({ writes: [], result: read(key) }));
  const sql = (store: SqliteStorage) => (store as unknown as { db: { exec(sql: string): void } }).db;
  const reopened = async (file: string, keys: string[]) => {
    const store = await SqliteStorage.open({ file, driver });
    try {
      return await store.getMany(keys);
    } finally {
      await store.close();
    }
  };

  it('answers a key it wrote from what it knows (a change behind its back is not read)', async () => {
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      await tx(store, ['k'], [{ op: 'set', key: 'k', value: 1 }]);
      sql(store).exec(`UPDATE kv SET value = '2' WHERE key = 'k'`);
      expect(await readIn(store, 'k')).toBe(1);
      expect(await store.get('k')).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('a purge run with a clock ahead forgets the rows it deleted: a later write of one is stored', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.UTC(2026, 11, 3, 8);
    vi.setSystemTime(t0);
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      await tx(store, ['acct'], [{ op: 'set', key: 'acct', value: { b: 1 }, ttlMs: 400 * DAY }]);
      expect(await readIn(store, 'acct')).toEqual({ b: 1 });
      expect(await store.purgeExpired(t0 + 401 * DAY)).toBe(1);
      // Live by this clock, but no longer in the file: the read says so, and the write is an insert.
      expect(await readIn(store, 'acct')).toBeUndefined();
      await tx(store, ['acct'], [{ op: 'set', key: 'acct', value: { b: 2 }, ttlMs: 400 * DAY }]);
    } finally {
      await store.close();
    }
    expect(await reopened(file, ['acct'])).toEqual([{ b: 2 }]);
  });

  it('a transaction SQLite refuses halfway leaves nothing it wrote among the rows it knows', async () => {
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      await tx(store, ['k'], [{ op: 'set', key: 'k', value: 1 }]);
      sql(store).exec(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON kv WHEN NEW.key = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
      );
      const refused = tx(
        store,
        ['k', 'refused'],
        [
          { op: 'set', key: 'k', value: 2 },
          { op: 'set', key: 'refused', value: 1 },
        ],
      );
      await expect(refused).rejects.toThrow(/refused by the test/);
      expect(await readIn(store, 'k')).toBe(1);
      expect(await store.get('k')).toBe(1);
    } finally {
      await store.close();
    }
    expect(await reopened(file, ['k', 'refused'])).toEqual([1, undefined]);
  });

  it('a set, delete, counter or compare-and-set after a non-durable write of the key is what a transaction reads next', async () => {
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      const waitThen = async (key: string, op: () => Promise<unknown>) => {
        await readIn(store, key);
        await store.transact([key], () => ({ writes: [{ op: 'set', key, value: 10 }], result: null }), { durable: false });
        await op();
      };
      await waitThen('s', () => store.set('s', 20));
      await waitThen('d', () => store.delete('d'));
      await waitThen('i', () => store.increment('i', 5));
      await waitThen('c', () => store.compareAndSet('c', 10, 30));
      expect(await Promise.all(['s', 'd', 'i', 'c'].map((k) => readIn(store, k)))).toEqual([20, undefined, 15, 30]);
    } finally {
      await store.close();
    }
    expect(await reopened(file, ['s', 'd', 'i', 'c'])).toEqual([20, undefined, 15, 30]);
  });
});
