import { copyFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { TxPlan } from '../../kernel/Storage.js';
import { SqliteStorage } from './SqliteStorage.js';
import { DEFERRED_COMMIT_MS } from './SqliteWrites.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * Non-durable transactions wait for the next commit (SqliteWrites). What a crash of the process
 * would leave is read from a copy of the database file and its WAL taken at that moment: the
 * store writes frames to the WAL only when it commits, so the copy is exactly what a kill -9
 * then would have left on disk.
 */
const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-writes-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => void vi.useRealTimers());

const put = (key: string, value: unknown) => (): TxPlan<null> => ({ writes: [{ op: 'set', key, value }], result: null });

describe.each(SQLITE_DRIVERS)('SQLite on %s', (driver) => {
  let n = 0;
  const open = async () => SqliteStorage.open({ file: join(dir, `${driver.replace(/\W/g, '-')}-${++n}.db`), driver });

  /** The keys a crash now would keep, of `keys`. */
  const afterCrash = async (store: SqliteStorage, keys: string[]): Promise<string[]> => {
    const copy = `${store.file}.crash-${++n}`;
    copyFileSync(store.file, copy);
    if (existsSync(`${store.file}-wal`)) copyFileSync(`${store.file}-wal`, `${copy}-wal`);
    const image = await SqliteStorage.open({ file: copy, driver });
    try {
      const values = await image.getMany(keys);
      return keys.filter((_, i) => values[i] !== undefined);
    } finally {
      await image.close();
    }
  };

  it('a non-durable transaction is read at once, and the next durable write commits it with its own', async () => {
    const store = await open();
    try {
      await store.set('credit', 1);
      await store.transact(['hold'], put('hold', { tokens: 7 }), { durable: false });
      expect(await store.get('hold')).toEqual({ tokens: 7 });
      expect(await afterCrash(store, ['credit', 'hold'])).toEqual(['credit']);

      await store.transact(['settle'], put('settle', { tokens: 5 }));
      expect(await afterCrash(store, ['credit', 'hold', 'settle'])).toEqual(['credit', 'hold', 'settle']);
    } finally {
      await store.close();
    }
  });

  it('every kind of durable write commits what waits', async () => {
    const store = await open();
    try {
      const writes: Array<[string, () => Promise<unknown>]> = [
        ['set', () => store.set('s', 1)],
        ['delete', () => store.delete('s')],
        ['increment', () => store.increment('i', 1)],
        ['compareAndSet', () => store.compareAndSet('c', undefined, 1)],
        ['append', () => store.append('log', { a: 1 })],
        ['trimLog', () => store.trimLog('log', 0)],
      ];
      for (const [name, write] of writes) {
        const key = `wait-${name}`;
        await store.transact([key], put(key, true), { durable: false });
        expect(await afterCrash(store, [key]), `before ${name}`).toEqual([]);
        await write();
        expect(await afterCrash(store, [key]), `after ${name}`).toEqual([key]);
      }
    } finally {
      await store.close();
    }
  });

  it(`commits what waits after ${DEFERRED_COMMIT_MS} ms when no durable write comes`, async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const store = await open();
    try {
      await store.transact(['byok'], put('byok', { tokens: 3 }), { durable: false });
      vi.advanceTimersByTime(DEFERRED_COMMIT_MS - 1);
      expect(await afterCrash(store, ['byok'])).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(await afterCrash(store, ['byok'])).toEqual(['byok']);
    } finally {
      await store.close();
    }
  });

  it('a durable transaction whose plan throws changes nothing, and what waits still commits', async () => {
    const store = await open();
    try {
      await store.transact(['hold'], put('hold', 1), { durable: false });
      await expect(
        store.transact(['x'], () => {
          throw new Error('the plan refused');
        }),
      ).rejects.toThrow('the plan refused');
      await expect(
        store.transact(
          ['y'],
          () => {
            throw new Error('a non-durable plan refused');
          },
          { durable: false },
        ),
      ).rejects.toThrow('a non-durable plan refused');
      expect(await store.get('hold')).toBe(1);
      await store.set('after', 2);
      expect(await afterCrash(store, ['hold', 'after', 'x', 'y'])).toEqual(['hold', 'after']);
    } finally {
      await store.close();
    }
  });

  it('close commits what waits (a stop is not a crash)', async () => {
    const store = await open();
    await store.transact(['hold'], put('hold', { tokens: 9 }), { durable: false });
    await store.close();
    const again = await SqliteStorage.open({ file: store.file, driver });
    try {
      expect(await again.get('hold')).toEqual({ tokens: 9 });
    } finally {
      await again.close();
    }
  });

  it('a non-durable transaction is whole or absent: its writes and log lines commit together', async () => {
    const store = await open();
    try {
      await store.transact(
        ['a', 'b'],
        () => ({
          writes: [
            { op: 'set', key: 'a', value: 1 },
            { op: 'set', key: 'b', value: 2 },
            { op: 'append', log: 'ledger', record: { kind: 'reserve' } },
          ],
          result: null,
        }),
        { durable: false },
      );
      expect((await store.readLog('ledger')).map((e) => e.record)).toEqual([{ kind: 'reserve' }]);
      expect(await afterCrash(store, ['a', 'b'])).toEqual([]);
      await store.set('c', 3);
      expect(await afterCrash(store, ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    } finally {
      await store.close();
    }
  });
});
