import { copyFileSync, existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { TxPlan, TxWrite } from '../../kernel/Storage.js';
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
const writeAll =
  (...writes: TxWrite[]) =>
  (): TxPlan<null> => ({ writes, result: null });

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

  it('what waits is what every operation reads: gets, ranges, the due list, transactions, counters', async () => {
    const store = await open();
    try {
      await store.set('w:gone', 'stored');
      await store.set('w:count', 5);
      const due = Date.now() - 1;
      await store.transact(
        ['w:hold', 'w:gone', 'w:count'],
        writeAll(
          { op: 'set', key: 'w:hold', value: { tokens: 4 }, dueAt: due },
          { op: 'delete', key: 'w:gone' },
          { op: 'set', key: 'w:count', value: 7 },
          { op: 'set', key: 'w:brief', value: 1, ttlMs: 1 },
        ),
        { durable: false },
      );
      await new Promise((r) => setTimeout(r, 5)); // deliberate: w:brief's 1 ms TTL runs out
      expect(await store.get('w:hold')).toEqual({ tokens: 4 });
      expect(await store.getMany(['w:gone', 'w:count', 'w:brief'])).toEqual([undefined, 7, undefined]);
      let seen: unknown[] = [];
      await store.transact(['w:hold', 'w:gone', 'w:count', 'w:brief'], (read) => {
        seen = ['w:hold', 'w:gone', 'w:count', 'w:brief'].map((k) => read(k));
        return { writes: [], result: null };
      });
      expect(seen).toEqual([{ tokens: 4 }, undefined, 7, undefined]);

      await store.transact(['w:next'], put('w:next', 1), { durable: false });
      expect(await store.keys('w:')).toEqual(['w:count', 'w:hold', 'w:next']);
      await store.transact(['w:next2'], put('w:next2', 1), { durable: false });
      expect((await store.listKeys('w:', { limit: 10 })).keys).toEqual(['w:count', 'w:hold', 'w:next', 'w:next2']);
      await store.transact(['w:hold2'], writeAll({ op: 'set', key: 'w:hold2', value: 0, dueAt: due }), { durable: false });
      expect(await store.dueKeys('w:', Date.now(), 10)).toEqual(['w:hold', 'w:hold2']);

      await store.transact(['w:count'], put('w:count', 10), { durable: false });
      expect(await store.increment('w:count', 1)).toBe(11);
      await store.transact(['w:cas'], put('w:cas', { v: 1 }), { durable: false });
      expect(await store.compareAndSet('w:cas', { v: 1 }, { v: 2 })).toBe(true);
      expect(await store.get('w:cas')).toEqual({ v: 2 });
      await store.transact(['w:del'], put('w:del', 1), { durable: false });
      expect(await store.delete('w:del')).toBe(true);
      expect(await store.get('w:del')).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('a write after what waited for the same key wins, in SQLite too', async () => {
    const store = await open();
    try {
      // A plain set, a durable transaction's set and its delete, each over a row that waits.
      await store.transact(['k1'], put('k1', 'waited'), { durable: false });
      await store.set('k1', 'set after');
      await store.transact(['k2'], put('k2', 'waited'), { durable: false });
      await store.transact(['k2'], put('k2', 'settled'));
      await store.set('k3', 'stored');
      await store.transact(['k3'], put('k3', 'waited'), { durable: false });
      await store.transact(['k3'], writeAll({ op: 'delete', key: 'k3' }));
      await store.transact(['k4'], writeAll({ op: 'delete', key: 'k4' }), { durable: false });
      await store.transact(['k4'], put('k4', 'set after a waiting delete'));
      expect(await store.getMany(['k1', 'k2', 'k3', 'k4'])).toEqual(['set after', 'settled', undefined, 'set after a waiting delete']);
      const copy = `${store.file}.image`;
      copyFileSync(store.file, copy);
      copyFileSync(`${store.file}-wal`, `${copy}-wal`);
      const image = await SqliteStorage.open({ file: copy, driver });
      try {
        expect(await image.getMany(['k1', 'k2', 'k3', 'k4'])).toEqual(['set after', 'settled', undefined, 'set after a waiting delete']);
      } finally {
        await image.close();
      }
    } finally {
      await store.close();
    }
  });

  it("a row that waits and is deleted by the next commit never reaches SQLite's pages (a call's hold)", async () => {
    const store = await open();
    try {
      // Warm the tree so both commits below change the same pages apart from the hold.
      for (let i = 0; i < 50; i++) await store.set(`user:${i}`, { i });
      const walFrames = () => statSync(`${store.file}-wal`).size;
      const settle = (n: number) => writeAll({ op: 'set', key: 'user:7', value: { n } });
      let before = walFrames();
      await store.transact(['user:7'], settle(1));
      const plain = walFrames() - before;
      before = walFrames();
      await store.transact(['hold:7'], writeAll({ op: 'set', key: 'hold:7', value: { tokens: 9 }, dueAt: Date.now() + 60_000 }), {
        durable: false,
      });
      await store.transact(['user:7', 'hold:7'], writeAll({ op: 'delete', key: 'hold:7' }, { op: 'set', key: 'user:7', value: { n: 2 } }));
      expect(walFrames() - before).toBe(plain);
      expect(await store.get('hold:7')).toBeUndefined();
      expect(await store.dueKeys('hold:', Date.now() + 120_000, 10)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('a value JSON cannot hold is refused before the write transaction: what waits stays', async () => {
    const store = await open();
    try {
      await store.transact(['hold'], put('hold', 1), { durable: false });
      await expect(
        store.transact(['bad'], writeAll({ op: 'append', log: 'l', record: 1 }, { op: 'set', key: 'bad', value: undefined })),
      ).rejects.toThrow(/JSON-serialisable/);
      expect(await store.readLog('l')).toEqual([]);
      await store.set('after', 2);
      expect(await afterCrash(store, ['hold', 'after', 'bad'])).toEqual(['hold', 'after']);
    } finally {
      await store.close();
    }
  });

  it("a rolled-back append's number is the next append's: the log stays 1, 2, 3", async () => {
    const store = await open();
    try {
      // SQLite itself refusing a row mid-transaction (as a full disk would), after the append went in.
      (store as unknown as { db: { exec(sql: string): void } }).db.exec(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON kv WHEN NEW.key = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
      );
      expect(await store.append('ledger', { n: 1 })).toBe(1);
      const appendThenRefused = writeAll({ op: 'append', log: 'ledger', record: { n: 'lost' } }, { op: 'set', key: 'refused', value: 1 });
      await expect(store.transact(['refused'], appendThenRefused)).rejects.toThrow(/refused by the test/);
      expect(await store.append('ledger', { n: 2 })).toBe(2);
      // A non-durable one: its row waits, so SQLite refuses it at the commit that writes it, with what
      // waited. (A durable transaction that works first ends the failure the refusal recorded, under
      // which a non-durable one would commit at once.)
      await store.transact(['ok'], put('ok', 1));
      await store.transact(['refused'], appendThenRefused, { durable: false });
      await expect(store.set('other', 1)).rejects.toThrow(/refused by the test/);
      expect(await store.append('ledger', { n: 3 })).toBe(3);
      expect((await store.readLog<{ n: number }>('ledger')).map((e) => [e.seq, e.record.n])).toEqual([
        [1, 1],
        [2, 2],
        [3, 3],
      ]);
    } finally {
      await store.close();
    }
  });
});
