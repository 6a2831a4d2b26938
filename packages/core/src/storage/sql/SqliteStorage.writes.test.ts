import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { TxWrite } from '../../kernel/Storage.js';
import { loadSqliteDriver } from './loadSqliteDriver.js';
import { SqliteStorage } from './SqliteStorage.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * What the SQLite store writes, read back from the file after the store closed (it holds the file
 * exclusively while open). A metered call rewrites day rows and spend windows with long TTLs and
 * appends to two logs in each of its transactions: the store keeps a row's expiry when it would
 * move by less than TTL/256 (TTLs of an hour or more; keepsExpiry), so the expiry index is not
 * rewritten, and writes a log's head only when the log starts or is trimmed (migration 4).
 */
const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-writes-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 30, 12);

describe.each(SQLITE_DRIVERS)('SQLite on %s: what a write stores', (driver) => {
  let n = 0;
  const newFile = () => join(dir, `${driver.replace(/\W/g, '-')}-${n++}.db`);
  /** The store's rows and log heads as the file holds them. */
  const fileRows = async (file: string) => {
    const db = (await loadSqliteDriver(driver)).open(file);
    try {
      const kv = db.prepare('SELECT key, value, expires_at, due_at FROM kv ORDER BY key').all() as Array<{
        key: string;
        value: string;
        expires_at: number | null;
        due_at: number | null;
      }>;
      const heads = db.prepare('SELECT log, last_seq FROM log_heads ORDER BY log').all() as Array<{ log: string; last_seq: number }>;
      return { kv: new Map(kv.map((r) => [r.key, r])), heads: new Map(heads.map((h) => [h.log, Number(h.last_seq)])) };
    } finally {
      db.close();
    }
  };
  const at = (ms: number) => vi.setSystemTime(ms);
  const tx = (store: SqliteStorage, keys: string[], writes: TxWrite[]) => store.transact(keys, () => ({ writes, result: null }));

  it('a rewrite with a long TTL keeps the expiry within TTL/256; a larger move, a short TTL or a new due time is written', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      at(T0);
      await tx(
        store,
        ['day', 'short', 'due'],
        [
          { op: 'set', key: 'day', value: { calls: 1 }, ttlMs: 400 * DAY },
          { op: 'set', key: 'short', value: 1, ttlMs: 60_000 },
          { op: 'set', key: 'due', value: 'held', dueAt: T0 + 900_000, ttlMs: 7 * DAY },
        ],
      );
      // An hour later: within 400 days / 256 (37.5 h) for the day row; the minute window moves.
      at(T0 + 3_600_000);
      await tx(
        store,
        ['day', 'short', 'due'],
        [
          { op: 'set', key: 'day', value: { calls: 2 }, ttlMs: 400 * DAY },
          { op: 'set', key: 'short', value: 2, ttlMs: 60_000 },
          // Unlisted from dueKeys (no dueAt): written whole, whatever the expiry.
          { op: 'set', key: 'due', value: 'done', ttlMs: 7 * DAY },
        ],
      );
      expect(await store.get('day')).toEqual({ calls: 2 });
      expect(await store.dueKeys('due', T0 + DAY, 10)).toEqual([]);
    } finally {
      await store.close();
    }
    let rows = await fileRows(file);
    expect(rows.kv.get('day')).toMatchObject({ value: '{"calls":2}', expires_at: T0 + 400 * DAY, due_at: null });
    expect(rows.kv.get('short')).toMatchObject({ value: '2', expires_at: T0 + 3_600_000 + 60_000 });
    expect(rows.kv.get('due')).toMatchObject({ value: '"done"', expires_at: T0 + 3_600_000 + 7 * DAY, due_at: null });

    const again = await SqliteStorage.open({ file, driver });
    try {
      // Two days on: past 37.5 h, so the expiry moves; a shorter TTL moves it too.
      at(T0 + 2 * DAY);
      await tx(
        again,
        ['day', 'due'],
        [
          { op: 'set', key: 'day', value: { calls: 3 }, ttlMs: 400 * DAY },
          { op: 'set', key: 'due', value: 'done', ttlMs: DAY },
        ],
      );
    } finally {
      await again.close();
    }
    rows = await fileRows(file);
    expect(rows.kv.get('day')).toMatchObject({ value: '{"calls":3}', expires_at: T0 + 2 * DAY + 400 * DAY });
    expect(rows.kv.get('due')).toMatchObject({ expires_at: T0 + 3 * DAY });
  });

  it('a key deleted or set twice in one transaction ends as its last write says, expiry included', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      at(T0);
      await tx(
        store,
        ['a', 'b'],
        [
          { op: 'set', key: 'a', value: 1, ttlMs: 400 * DAY },
          { op: 'set', key: 'b', value: 1, ttlMs: 400 * DAY },
        ],
      );
      at(T0 + 1000);
      await tx(
        store,
        ['a', 'b'],
        [
          // Deleted then set: the row read is gone, so the set must insert it again.
          { op: 'delete', key: 'a' },
          { op: 'set', key: 'a', value: 2, ttlMs: 400 * DAY },
          // Set without a TTL, then with one: the second write decides.
          { op: 'set', key: 'b', value: 2 },
          { op: 'set', key: 'b', value: 3, ttlMs: 400 * DAY },
        ],
      );
      expect(await store.getMany(['a', 'b'])).toEqual([2, 3]);
    } finally {
      await store.close();
    }
    const rows = await fileRows(file);
    expect(rows.kv.get('a')).toMatchObject({ value: '2', expires_at: T0 + 1000 + 400 * DAY });
    expect(rows.kv.get('b')).toMatchObject({ value: '3', expires_at: T0 + 1000 + 400 * DAY });
  });

  it('an expired row is written anew, not kept', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    try {
      at(T0);
      await tx(store, ['k'], [{ op: 'set', key: 'k', value: 1, ttlMs: 3_600_000 }]);
      at(T0 + 3_600_001);
      expect(await store.get('k')).toBeUndefined();
      await tx(store, ['k'], [{ op: 'set', key: 'k', value: 2, ttlMs: 3_600_000 }]);
      expect(await store.get('k')).toBe(2);
    } finally {
      await store.close();
    }
    expect((await fileRows(file)).kv.get('k')).toMatchObject({ value: '2', expires_at: T0 + 3_600_001 + 3_600_000 });
  });

  it("appends leave a log's head alone; a trim raises it to the last number, so appends go on past a dropped log", async () => {
    const file = newFile();
    let store = await SqliteStorage.open({ file, driver });
    try {
      for (let i = 1; i <= 3; i++) expect(await store.append('ledger:u', { i })).toBe(i);
      await tx(store, [], [{ op: 'append', log: 'ledger:u', record: { i: 4 } }]);
    } finally {
      await store.close();
    }
    expect((await fileRows(file)).heads.get('ledger:u')).toBe(0);

    store = await SqliteStorage.open({ file, driver });
    try {
      expect(await store.trimLog('ledger:u', 2)).toBe(2);
      expect(await store.trimLog('ledger:u', 10)).toBe(2);
      expect(await store.readLog('ledger:u')).toEqual([]);
      expect((await store.listLogs('ledger:', { limit: 10 })).logs).toEqual(['ledger:u']);
    } finally {
      await store.close();
    }
    expect((await fileRows(file)).heads.get('ledger:u')).toBe(4);

    store = await SqliteStorage.open({ file, driver });
    try {
      expect(await store.append('ledger:u', { i: 5 })).toBe(5);
      expect((await store.readLog<{ i: number }>('ledger:u')).map((e) => [e.seq, e.record.i])).toEqual([[5, 5]]);
    } finally {
      await store.close();
    }
  });

  it('a file whose heads an earlier release kept (the last number handed out) numbers on from them', async () => {
    const file = newFile();
    const store = await SqliteStorage.open({ file, driver });
    await store.append('usage:u', { i: 1 });
    await store.close();
    // As schema version 3 left a log: every append rewrote the head; then a trim of all of it.
    const db = (await loadSqliteDriver(driver)).open(file);
    db.exec("DELETE FROM logs WHERE log = 'usage:u'; UPDATE log_heads SET last_seq = 41 WHERE log = 'usage:u'");
    db.close();
    const upgraded = await SqliteStorage.open({ file, driver });
    try {
      expect(await upgraded.append('usage:u', { i: 42 })).toBe(42);
      expect(await upgraded.append('usage:u', { i: 43 })).toBe(43);
    } finally {
      await upgraded.close();
    }
  });
});
