import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from './MemoryStorage.js';
import { RedisStorage } from './RedisStorage.js';
import { PostgresStorage } from './sql/PostgresStorage.js';
import { SqliteStorage } from './sql/SqliteStorage.js';
import type { Storage } from '../kernel/Storage.js';
import {
  dropTestKeys,
  dropTestSchema,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
  testService,
} from '@ai-backend/test-utils/services';
import { waitFor } from '@ai-backend/test-utils';
import { SQLITE_DRIVERS } from './sql/__tests__/sqliteDrivers.js';

/** One backend under test: how to open a fresh, empty store and clean up after it. */
interface Backend {
  name: Storage['kind'];
  /** The name plus, for SQLite, the driver. */
  label?: string;
  open(): Promise<{ store: Storage; cleanup(): Promise<void> }>;
}

// Without a Redis or PostgreSQL their suites skip and the run's last line says so (CI fails instead).
const redis = await testRedis();
const redisServer = await testService('redis-server');
const postgres = await testPostgres();

const backends: Backend[] = (
  [
    { name: 'memory', open: async () => ({ store: new MemoryStorage(), cleanup: async () => undefined }) },
    ...SQLITE_DRIVERS.map((driver) => ({
      name: 'sqlite' as const,
      label: `sqlite (${driver})`,
      open: async () => {
        const dir = await mkdtemp(join(tmpdir(), 'storage-conf-'));
        return {
          store: await SqliteStorage.open({ file: join(dir, 'data.db'), driver }),
          cleanup: () => rm(dir, { recursive: true, force: true }),
        };
      },
    })),
    {
      name: 'postgres',
      open: async () => {
        const opts = testPostgresOptions(postgres, 'conformance');
        return { store: await PostgresStorage.connect(opts), cleanup: () => dropTestSchema(postgres, opts.schema) };
      },
    },
    {
      name: 'redis',
      open: async () => {
        const opts = testRedisOptions(redis, 'conformance');
        return { store: await RedisStorage.connect(opts), cleanup: async () => void (await dropTestKeys(redis, opts.keyPrefix)) };
      },
    },
  ] satisfies Backend[]
)
  .filter((b) => (b.name !== 'redis' || redis.ok) && (b.name !== 'postgres' || postgres.ok))
  .map((b: Backend) => ({ ...b, label: b.label ?? b.name }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A key with a short ttl is gone within a few seconds (each backend expires on its own clock). */
const expired = (store: Storage, key: string) =>
  waitFor(async () => (await store.get(key)) === undefined, { timeoutMs: 3000, what: `${key} expired` });

async function expectAppCode(p: Promise<unknown>, appCode: string): Promise<void> {
  await expect(p).rejects.toMatchObject({ appCode });
}

describe.each(backends)('storage conformance: $label', (backend) => {
  let store: Storage;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ store, cleanup } = await backend.open());
  });
  afterEach(async () => {
    await store?.close();
    await cleanup?.();
  });

  it('reports its kind and is healthy', async () => {
    expect(store.kind).toBe(backend.name);
    expect(await store.health()).toMatchObject({ ok: true });
  });

  it('gets, sets, overwrites and deletes', async () => {
    expect(await store.get('k')).toBeUndefined();
    await store.set('k', { a: 1, list: [1, 'two', null], nested: { t: true } });
    expect(await store.get('k')).toEqual({ a: 1, list: [1, 'two', null], nested: { t: true } });
    await store.set('k', 'second');
    expect(await store.get('k')).toBe('second');
    await store.set('n', 0);
    expect(await store.get('n')).toBe(0);
    expect(await store.delete('k')).toBe(true);
    expect(await store.delete('k')).toBe(false);
    expect(await store.get('k')).toBeUndefined();
  });

  it('keeps stored values isolated from caller mutation', async () => {
    const value = { items: [1, 2], meta: { v: 1 } };
    await store.set('obj', value);
    value.items.push(3);
    value.meta.v = 99;
    const read = await store.get<typeof value>('obj');
    expect(read).toEqual({ items: [1, 2], meta: { v: 1 } });
    read!.items.push(4);
    expect(await store.get('obj')).toEqual({ items: [1, 2], meta: { v: 1 } });
    const record = { x: 1 };
    await store.append('iso', record);
    record.x = 2;
    const [entry] = await store.readLog<{ x: number }>('iso');
    expect(entry?.record).toEqual({ x: 1 });
  });

  it('expires values after their ttl', async () => {
    await store.set('short', 'v', { ttlMs: 250 });
    await store.set('long', 'v', { ttlMs: 60_000 });
    await store.set('forever', 'v');
    expect(await store.get('short')).toBe('v');
    await expired(store, 'short');
    expect(await store.get('long')).toBe('v');
    expect((await store.keys('')).sort()).toEqual(['forever', 'long']);
    expect(await store.delete('short')).toBe(false);
  });

  it('applies an increment ttl when the counter is created, and keeps it afterwards', async () => {
    expect(await store.increment('window', 1, { ttlMs: 250 })).toBe(1);
    expect(await store.increment('window', 1, { ttlMs: 100_000 })).toBe(2);
    await expired(store, 'window'); // within the first ttl: the second one did not replace it
    expect(await store.increment('window', 1)).toBe(1);
  });

  it('compare-and-set: set-if-absent, deep equality, mismatch and ttl', async () => {
    expect(await store.compareAndSet('c', undefined, { v: 1, tags: ['a'] })).toBe(true);
    expect(await store.compareAndSet('c', undefined, { v: 2 })).toBe(false);
    expect(await store.get('c')).toEqual({ v: 1, tags: ['a'] });
    // Deep equality, whatever the key order of the expected value.
    expect(await store.compareAndSet('c', { tags: ['a'], v: 1 }, { v: 2 })).toBe(true);
    expect(await store.compareAndSet('c', { v: 1, tags: ['a'] }, { v: 3 })).toBe(false);
    expect(await store.compareAndSet('c', { v: '2' }, { v: 3 })).toBe(false);
    expect(await store.get('c')).toEqual({ v: 2 });
    expect(await store.compareAndSet('absent', null, 1)).toBe(false);
    expect(await store.get('absent')).toBeUndefined();
    expect(await store.compareAndSet('c', { v: 2 }, { v: 4 }, { ttlMs: 250 })).toBe(true);
    expect(await store.get('c')).toEqual({ v: 4 });
    await expired(store, 'c');
    expect(await store.compareAndSet('c', undefined, 'again')).toBe(true);
  });

  it('only one of many concurrent set-if-absent calls wins', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.compareAndSet('once', undefined, i)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.get('once')).toBe(results.indexOf(true));
  });

  it('increments counters, absent counting as 0, with a min floor', async () => {
    expect(await store.increment('ctr', 5)).toBe(5);
    expect(await store.increment('ctr', -2)).toBe(3);
    expect(await store.get('ctr')).toBe(3);
    expect(await store.increment('bal', 10, { min: 0 })).toBe(10);
    expect(await store.increment('bal', -7, { min: 0 })).toBe(3);
    expect(await store.increment('bal', -5, { min: 0 })).toBeNull();
    expect(await store.get('bal')).toBe(3);
    expect(await store.increment('bal', -3, { min: 0 })).toBe(0);
    expect(await store.increment('nothing', -1, { min: 0 })).toBeNull();
    expect(await store.get('nothing')).toBeUndefined();
    await store.set('text', 'not a number');
    expect(await store.increment('text', 2)).toBe(2);
  });

  it('1000 concurrent increments from many async callers add up', async () => {
    const results = await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        if (i % 3 === 0) await sleep(i % 7); // spread callers over several ticks
        return store.increment('hits', 1);
      }),
    );
    expect(await store.get('hits')).toBe(1000);
    expect(new Set(results).size).toBe(1000);
    expect(Math.max(...(results as number[]))).toBe(1000);
  });

  it('concurrent increments with a floor never cross it', async () => {
    await store.set('tokens', 100);
    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        if (i % 2 === 0) await sleep(i % 5); // spread callers over several ticks
        return store.increment('tokens', -1, { min: 0 });
      }),
    );
    const granted = results.filter((r) => r !== null);
    expect(granted).toHaveLength(100);
    expect(new Set(granted).size).toBe(100);
    expect(Math.min(...(granted as number[]))).toBe(0);
    expect(await store.get('tokens')).toBe(0);
  });

  it('lists keys by prefix, literally (no glob)', async () => {
    await store.set('ws:a', 1);
    await store.set('ws:b', 2);
    await store.set('wsx', 3);
    await store.set('other:ws:c', 4);
    await store.set('gl*b?[x]', 5);
    await store.set('glob', 6);
    expect((await store.keys('ws:')).sort()).toEqual(['ws:a', 'ws:b']);
    expect(await store.keys('gl*')).toEqual(['gl*b?[x]']);
    expect(await store.keys('none:')).toEqual([]);
    await store.append('ws:log', 'a log is not a key');
    expect((await store.keys('ws:')).sort()).toEqual(['ws:a', 'ws:b']);
  });

  it('appends to logs and reads them in order with after and limit', async () => {
    const seqs: number[] = [];
    for (let i = 1; i <= 5; i++) seqs.push(await store.append('ledger', { i }));
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(await store.append('other', 'x')).toBe(1);
    expect(await store.readLog('ledger')).toEqual([1, 2, 3, 4, 5].map((i) => ({ seq: i, record: { i } })));
    expect((await store.readLog('ledger', { after: 2 })).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect((await store.readLog('ledger', { limit: 2 })).map((e) => e.seq)).toEqual([1, 2]);
    expect(await store.readLog('ledger', { after: 3, limit: 1 })).toEqual([{ seq: 4, record: { i: 4 } }]);
    expect(await store.readLog('ledger', { after: 5 })).toEqual([]);
    expect(await store.readLog('ledger', { limit: 0 })).toEqual([]);
    expect(await store.readLog('missing')).toEqual([]);
    expect(await store.readLog('other')).toEqual([{ seq: 1, record: 'x' }]);
  });

  it('gives concurrent appends distinct, gapless sequence numbers', async () => {
    const seqs = await Promise.all(Array.from({ length: 200 }, (_, i) => store.append('burst', i)));
    expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    const log = await store.readLog<number>('burst');
    for (const { seq, record } of log) expect(seqs[record]).toBe(seq);
  });

  it('reads logs newest first from a cursor, through the index', async () => {
    for (let i = 1; i <= 7; i++) await store.append('paged', { i });
    const first = await store.readLog<{ i: number }>('paged', { newestFirst: true, limit: 3 });
    expect(first.map((e) => e.seq)).toEqual([7, 6, 5]);
    const second = await store.readLog<{ i: number }>('paged', { newestFirst: true, limit: 3, before: 5 });
    expect(second.map((e) => e.record.i)).toEqual([4, 3, 2]);
    expect((await store.readLog('paged', { newestFirst: true, limit: 3, before: 2 })).map((e) => e.seq)).toEqual([1]);
    expect(await store.readLog('nothing', { newestFirst: true, limit: 3 })).toEqual([]);
  });

  it('trims a log head: later records keep their seq, reads skip the dropped ones, appends go on', async () => {
    for (let i = 1; i <= 6; i++) await store.append('trim', { i });
    expect(await store.trimLog('trim', 3)).toBe(3);
    // Idempotent, and never past the head.
    expect(await store.trimLog('trim', 2)).toBe(0);
    expect((await store.readLog<{ i: number }>('trim')).map((e) => [e.seq, e.record.i])).toEqual([
      [4, 4],
      [5, 5],
      [6, 6],
    ]);
    expect((await store.readLog('trim', { limit: 2 })).map((e) => e.seq)).toEqual([4, 5]);
    expect((await store.readLog('trim', { after: 1, limit: 1 })).map((e) => e.seq)).toEqual([4]);
    expect((await store.readLog('trim', { newestFirst: true, limit: 5 })).map((e) => e.seq)).toEqual([6, 5, 4]);
    expect((await store.readLog('trim', { newestFirst: true, limit: 2, before: 5 })).map((e) => e.seq)).toEqual([4]);
    expect(await store.append('trim', { i: 7 })).toBe(7);
    await store.transact([], () => ({ writes: [{ op: 'append', log: 'trim', record: { i: 8 } }], result: null }));
    expect((await store.readLog<{ i: number }>('trim', { after: 6 })).map((e) => [e.seq, e.record.i])).toEqual([
      [7, 7],
      [8, 8],
    ]);
    // The whole log trimmed: empty reads, and the next append still gets the next number.
    expect(await store.trimLog('trim', 100)).toBe(5);
    expect(await store.readLog('trim')).toEqual([]);
    expect(await store.readLog('trim', { newestFirst: true, limit: 3 })).toEqual([]);
    expect(await store.append('trim', { i: 9 })).toBe(9);
    expect(await store.trimLog('never-written', 5)).toBe(0);
  });

  it('lists logs by prefix a page at a time', async () => {
    const names = ['ll:a', 'll:b%2Fc', 'll:d', 'll:e', 'll:f', 'llx:other', 'other:ll:a'];
    for (const n of names) await store.append(n, { n });
    const seen = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.listLogs('ll:', { cursor, limit: 2 });
      for (const l of page.logs) seen.add(l);
      cursor = page.cursor;
      // Redis walks its whole keyspace with SCAN (COUNT is the page's hint, the shared test Redis
      // holds other suites' keys): many pages; the indexed stores need three.
      expect(++pages).toBeLessThan(store.kind === 'redis' ? 10_000_000 : 4);
    } while (cursor !== undefined);
    expect([...seen].sort()).toEqual(['ll:a', 'll:b%2Fc', 'll:d', 'll:e', 'll:f']);
    expect((await store.listLogs('nothing:', { limit: 10 })).logs).toEqual([]);
  });

  it('lists keys by prefix a page at a time, not expired ones, literally', async () => {
    for (const k of ['lk:a', 'lk:b*', 'lk:c', 'lk:d', 'lk:e', 'lkx:other', 'other:lk:a']) await store.set(k, 1);
    await store.set('lk:gone', 1, { ttlMs: 1 });
    await waitFor(async () => (await store.get('lk:gone')) === undefined, { timeoutMs: 2000, intervalMs: 5, what: 'lk:gone expired' });
    const seen = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.listKeys('lk:', { cursor, limit: 2 });
      expect(page.keys.length).toBeLessThanOrEqual(store.kind === 'redis' ? Number.POSITIVE_INFINITY : 2);
      for (const k of page.keys) seen.add(k);
      cursor = page.cursor;
      // As listLogs: a SCAN of the shared test Redis takes many pages; the indexed stores three.
      expect(++pages).toBeLessThan(store.kind === 'redis' ? 10_000_000 : 4);
    } while (cursor !== undefined);
    expect([...seen].sort()).toEqual(['lk:a', 'lk:b*', 'lk:c', 'lk:d', 'lk:e']);
    expect((await store.listKeys('nothing:', { limit: 10 })).keys).toEqual([]);
  });

  it("lists an owner's keys (a family listed per owner: an index on Redis) whatever wrote, deleted or expired them", async () => {
    // Every way of writing: set, compare-and-set, increment, a transaction's set and delete.
    await store.set('vault:al:openai', 1);
    await store.set('vault:al:gone', 1, { ttlMs: 1 });
    expect(await store.compareAndSet('vault:al:anthropic', undefined, 2)).toBe(true);
    await store.increment('vault:al:counter', 3);
    await store.set('vault:al:dropped', 1);
    await store.set('vault:al:txdrop', 1);
    await store.transact(['vault:al:tx', 'vault:al:txdrop'], () => ({
      writes: [
        { op: 'set', key: 'vault:al:tx', value: 4 },
        { op: 'delete', key: 'vault:al:txdrop' },
      ],
      result: null,
    }));
    expect(await store.delete('vault:al:dropped')).toBe(true);
    // Other owners, one whose name starts with this one's, and the family's root.
    for (const k of ['vault:alice:openai', 'vault:a:openai', 'vault:al', 'apikeyowner:al:k1', 'ws:client:al:w1']) await store.set(k, 0);
    await expired(store, 'vault:al:gone');
    const owned = ['vault:al:anthropic', 'vault:al:counter', 'vault:al:openai', 'vault:al:tx'];
    expect((await store.keys('vault:al:')).sort()).toEqual(owned);
    expect((await store.keys('vault:al:o')).sort()).toEqual(['vault:al:openai']);
    expect(await store.keys('vault:nobody:')).toEqual([]);
    expect((await store.keys('apikeyowner:al:')).sort()).toEqual(['apikeyowner:al:k1']);
    expect((await store.keys('ws:client:al:')).sort()).toEqual(['ws:client:al:w1']);
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await store.listKeys('vault:al:', { cursor, limit: 2 });
      // Redis pages by SCAN until its owner index is built (a new store's build scans the shared test Redis).
      expect(page.keys.length).toBeLessThanOrEqual(store.kind === 'redis' ? Number.POSITIVE_INFINITY : 2);
      for (const k of page.keys) seen.add(k);
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect([...seen].sort()).toEqual(owned);
    // Written again after a delete: listed again.
    await store.set('vault:al:dropped', 5);
    expect(await store.keys('vault:al:')).toContain('vault:al:dropped');
  });

  it('lists a family whole and by a prefix inside it (an index on Redis) whatever wrote, deleted or expired its keys', async () => {
    await store.set('aicache:h1', 1, { ttlMs: 600_000 });
    await store.set('aicache:gone', 1, { ttlMs: 1 });
    await store.increment('aicache:bytes:1', 10, { ttlMs: 600_000 });
    expect(await store.compareAndSet('aicache:h2', undefined, 2)).toBe(true);
    await store.set('aicache:dropped', 1);
    await store.transact(['aicache:tx', 'aicache:dropped'], () => ({
      writes: [
        { op: 'set', key: 'aicache:tx', value: 4, ttlMs: 600_000 },
        { op: 'delete', key: 'aicache:dropped' },
      ],
      result: null,
    }));
    await store.transact([], () => ({ writes: [{ op: 'set', key: 'alerts:outbox:d1', value: 1, dueAt: Date.now() }], result: null }));
    for (const k of ['alerts:dead:d1', 'ws:server:w1', 'stats:2026-12-01:rpc:p', 'stats:2026-12-02:rpc:p', 'vault:al:openai', 'vault:bo:x'])
      await store.set(k, 0);
    // Neighbours: a key that starts like a family without being in it, and another family.
    for (const k of ['aicachex:h1', 'alerts:outboxed', 'ws:serverx:w1']) await store.set(k, 0);
    await expired(store, 'aicache:gone');
    const cache = ['aicache:bytes:1', 'aicache:h1', 'aicache:h2', 'aicache:tx'];
    expect((await store.keys('aicache:')).sort()).toEqual(cache);
    expect(await store.keys('aicache:bytes:')).toEqual(['aicache:bytes:1']);
    expect(await store.keys('alerts:outbox:')).toEqual(['alerts:outbox:d1']);
    expect(await store.keys('alerts:dead:')).toEqual(['alerts:dead:d1']);
    expect(await store.keys('ws:server:')).toEqual(['ws:server:w1']);
    expect(await store.keys('stats:2026-12-01:')).toEqual(['stats:2026-12-01:rpc:p']);
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await store.listKeys('vault:', { cursor, limit: 1 });
      // Redis pages by SCAN until its index is built (a new store's build scans the shared test Redis).
      expect(page.keys.length).toBeLessThanOrEqual(store.kind === 'redis' ? Number.POSITIVE_INFINITY : 1);
      for (const k of page.keys) seen.add(k);
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect([...seen].sort()).toEqual(['vault:al:openai', 'vault:bo:x']);
    for (const k of cache) await store.delete(k);
    expect(await store.keys('aicache:')).toEqual([]);
  });

  it('gets many keys at once', async () => {
    await store.set('m1', 1);
    await store.set('m3', { three: 3 });
    expect(await store.getMany(['m1', 'm2', 'm3'])).toEqual([1, undefined, { three: 3 }]);
  });

  it('many keys at once, in one read or a transaction: absent, expired and repeated keys, past any batch size', async () => {
    // 40 keys: SQLite reads a transaction's keys 16 to a statement.
    const keys = Array.from({ length: 40 }, (_, i) => `many:${i}`);
    for (let i = 0; i < 40; i += 3) await store.set(keys[i]!, { i }, i % 2 ? { ttlMs: 100 } : undefined);
    await expired(store, 'many:39'); // the last one set with a ttl
    const want = keys.map((_, i) => (i % 3 === 0 && i % 2 === 0 ? { i } : undefined));
    expect(await store.getMany([...keys, 'many:0', 'many:39'])).toEqual([...want, { i: 0 }, undefined]);
    const seen = await store.transact([...keys, 'many:0'], (read) => ({ writes: [], result: keys.map((k) => read(k)) }));
    expect(seen).toEqual(want);
  });

  it('concurrent single reads of one tick each get their own key (duplicates included)', async () => {
    await store.set('b1', { one: 1 });
    await store.set('b2', [2]);
    const reads = await Promise.all([
      store.get('b1'),
      store.get('b2'),
      store.get('b-absent'),
      store.get('b1'),
      store.getMany(['b2', 'b1']),
    ]);
    expect(reads).toEqual([{ one: 1 }, [2], undefined, { one: 1 }, [[2], { one: 1 }]]);
    // Each caller gets its own copy, even of a key read twice in the same batch.
    (reads[0] as { one: number }).one = 99;
    expect(reads[3]).toEqual({ one: 1 });
  });

  it('compare-and-set matches a value a transaction wrote, whatever the key order', async () => {
    await store.transact(['tx-cas'], () => ({ writes: [{ op: 'set', key: 'tx-cas', value: { b: 2, a: { d: 4, c: 3 } } }], result: null }));
    expect(await store.compareAndSet('tx-cas', { a: { c: 3, d: 4 }, b: 2 }, { done: true })).toBe(true);
    expect(await store.get('tx-cas')).toEqual({ done: true });
  });

  it('values with a NUL character or backslashes go through transactions, logs and compare-and-set', async () => {
    const odd = { s: 'nul\u0000here \\u0000 "quoted" \\ é', n: [1.5, 0.1, 1e21] };
    await store.transact(['odd'], () => ({
      writes: [
        { op: 'set', key: 'odd', value: odd },
        { op: 'append', log: 'odd-log', record: odd },
      ],
      result: null,
    }));
    expect(await store.get('odd')).toEqual(JSON.parse(JSON.stringify(odd)));
    expect((await store.readLog('odd-log')).map((e) => e.record)).toEqual([JSON.parse(JSON.stringify(odd))]);
    expect(await store.compareAndSet('odd', await store.get('odd'), { ok: 1 })).toBe(true);
    expect(await store.get('odd')).toEqual({ ok: 1 });
  });

  it('a transaction that sets and then deletes one key leaves it deleted (last write wins)', async () => {
    await store.set('sd', 1);
    await store.transact(['sd', 'ds'], () => ({
      writes: [
        { op: 'set', key: 'sd', value: 2 },
        { op: 'delete', key: 'sd' },
        { op: 'delete', key: 'ds' },
        { op: 'set', key: 'ds', value: 'kept' },
      ],
      result: null,
    }));
    expect(await store.getMany(['sd', 'ds'])).toEqual([undefined, 'kept']);
  });

  it('a transaction reads, then applies sets, deletes and appends together', async () => {
    await store.set('acct', { n: 10 });
    await store.set('old', 'x');
    const result = await store.transact(['acct', 'old', 'absent'], (read) => {
      expect(read('absent')).toBeUndefined();
      expect(read('old')).toBe('x');
      const n = read<{ n: number }>('acct')!.n;
      return {
        writes: [
          { op: 'set', key: 'acct', value: { n: n - 3 } },
          { op: 'delete', key: 'old' },
          { op: 'set', key: 'absent', value: 'now', ttlMs: 60_000 },
          { op: 'append', log: 'txlog', record: { took: 3 } },
        ],
        result: n - 3,
      };
    });
    expect(result).toBe(7);
    expect(await store.getMany(['acct', 'old', 'absent'])).toEqual([{ n: 7 }, undefined, 'now']);
    expect(await store.readLog('txlog')).toEqual([{ seq: 1, record: { took: 3 } }]);
  });

  it('a transaction whose plan throws writes nothing and rethrows', async () => {
    await store.set('acct', 1);
    const boom = new Error('refused');
    await expect(
      store.transact(['acct'], () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(store.transact(['acct'], () => ({ writes: [], result: 'ok' }))).resolves.toBe('ok');
    expect(await store.get('acct')).toBe(1);
    expect(await store.readLog('txlog')).toEqual([]);
  });

  it('200 concurrent transactions on one key never lose an update and keep the log in step', async () => {
    await store.set('bal', 100);
    const take = () =>
      store.transact(['bal'], (read) => {
        const bal = read<number>('bal')!;
        if (bal < 1) return { writes: [], result: false };
        return {
          writes: [
            { op: 'set', key: 'bal', value: bal - 1 },
            { op: 'append', log: 'draws', record: { bal } },
          ],
          result: true,
        };
      });
    const results = await Promise.all(Array.from({ length: 200 }, take));
    expect(results.filter(Boolean)).toHaveLength(100);
    expect(await store.get('bal')).toBe(0);
    const log = await store.readLog<{ bal: number }>('draws');
    expect(log.map((e) => e.record.bal).sort((a, b) => b - a)).toEqual(Array.from({ length: 100 }, (_, i) => 100 - i));
  });

  it('lists due keys by prefix, oldest first, and unlists them on delete or plain set', async () => {
    await store.transact(['hold:a', 'hold:b', 'hold:c', 'other'], () => ({
      writes: [
        { op: 'set', key: 'hold:b', value: 1, dueAt: 2000 },
        { op: 'set', key: 'hold:a', value: 1, dueAt: 1000 },
        { op: 'set', key: 'hold:c', value: 1, dueAt: 9000 },
        { op: 'set', key: 'other', value: 1, dueAt: 1000 },
      ],
      result: null,
    }));
    expect(await store.dueKeys('hold:', 5000, 10)).toEqual(['hold:a', 'hold:b']);
    expect(await store.dueKeys('hold:', 5000, 1)).toEqual(['hold:a']);
    await store.transact(['hold:a'], () => ({ writes: [{ op: 'delete', key: 'hold:a' }], result: null }));
    await store.transact(['hold:b'], () => ({ writes: [{ op: 'set', key: 'hold:b', value: 2 }], result: null }));
    expect(await store.dueKeys('hold:', 10_000, 10)).toEqual(['hold:c']);
  });

  it("due keys of another prefix, however many and however early, never hide a prefix's due keys", async () => {
    // Holds and the alert outbox share the due index: a burst of due deliveries must not stop the hold sweep.
    await store.transact([], () => ({
      writes: Array.from({ length: 250 }, (_, i) => ({ op: 'set' as const, key: `alerts:outbox:${i}`, value: 1, dueAt: 100 + i })),
      result: null,
    }));
    await store.transact([], () => ({
      writes: [
        { op: 'set', key: 'hold:late', value: 1, dueAt: 2000 },
        { op: 'set', key: 'hold:early', value: 1, dueAt: 1000 },
      ],
      result: null,
    }));
    expect(await store.dueKeys('hold:', 5000, 200)).toEqual(['hold:early', 'hold:late']);
    expect(await store.dueKeys('hold:', 5000, 1)).toEqual(['hold:early']);
    expect(await store.dueKeys('alerts:outbox:', 5000, 300)).toHaveLength(250);
  });

  it("API key rows: the owner index lists exactly one owner's keys, and a record with its spend row moves in one transaction", async () => {
    // What services/apiKeys relies on: encoded owner ids never bleed into each other's prefix
    // (`a:b` vs `a`), and the reservation's transaction reads and writes several rows at once.
    const owners = ['a', 'a:b', 'a%3Ab', 'idp:https://x#1'];
    for (const [i, o] of owners.entries()) await store.set(`apikeyowner:${encodeURIComponent(o)}:K${i}`, 1);
    for (const [i, o] of owners.entries())
      expect(await store.keys(`apikeyowner:${encodeURIComponent(o)}:`)).toEqual([`apikeyowner:${encodeURIComponent(o)}:K${i}`]);
    await store.set('apikey:K0', { id: 'K0', revokedAt: null });
    const spend = await store.transact(['apikey:K0', 'apikeyspend:K0'], (read) => {
      const rec = read<{ revokedAt: string | null }>('apikey:K0');
      const cur = read<{ reserved: number }>('apikeyspend:K0') ?? { reserved: 0 };
      const next = { reserved: cur.reserved + 100 };
      return { writes: rec?.revokedAt === null ? [{ op: 'set', key: 'apikeyspend:K0', value: next, ttlMs: 60_000 }] : [], result: next };
    });
    expect(spend).toEqual({ reserved: 100 });
    expect(await store.getMany(['apikey:K0', 'apikeyspend:K0'])).toEqual([{ id: 'K0', revokedAt: null }, { reserved: 100 }]);
  });

  it('closes idempotently', async () => {
    await store.close();
    await expect(store.close()).resolves.toBeUndefined();
  });
});

describe.skipIf(!redis.ok)('redis backend', () => {
  const prefixes: string[] = [];
  const open = async (keyPrefix?: string) => {
    const opts = keyPrefix ? { ...testRedisOptions(redis), keyPrefix } : testRedisOptions(redis, 'redis');
    prefixes.push(opts.keyPrefix);
    return RedisStorage.connect(opts);
  };
  afterAll(async () => {
    for (const p of prefixes) await dropTestKeys(redis, p);
  });

  it('two instances (two connections, as two servers) increment one counter atomically', async () => {
    const a = await open();
    const b = await open(prefixes[0]);
    try {
      const calls = Array.from({ length: 1000 }, (_, i) => (i % 2 ? a : b).increment('shared', 1));
      const results = await Promise.all(calls);
      expect(await a.get('shared')).toBe(1000);
      expect(new Set(results).size).toBe(1000);
      await a.set('budget', 150);
      const spent = await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 2 ? a : b).increment('budget', -1, { min: 0 })));
      expect(spent.filter((r) => r !== null)).toHaveLength(150);
      expect(await b.get('budget')).toBe(0);
      const wins = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).compareAndSet('leader', undefined, i)));
      expect(wins.filter(Boolean)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('three instances: 600 concurrent transactions on one hot key all commit, none lost (no CONFLICT)', async () => {
    const a = await open();
    const b = await open(prefixes.at(-1));
    const c = await open(prefixes.at(-1));
    try {
      await a.set('hot', 0);
      const bump = (s: RedisStorage) =>
        s.transact(['hot', 'other'], (read) => ({
          writes: [
            { op: 'set', key: 'hot', value: read<number>('hot')! + 1 },
            { op: 'append', log: 'bumps', record: read<number>('hot') },
          ],
          result: read<number>('hot')!,
        }));
      const seen = await Promise.all(Array.from({ length: 600 }, (_, i) => bump([a, b, c][i % 3]!)));
      expect(await b.get('hot')).toBe(600);
      expect(new Set(seen).size).toBe(600);
      expect((await c.readLog('bumps')).length).toBe(600);
      // No lock row is left behind.
      const raw = new (await import('ioredis')).Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
      await raw.connect();
      try {
        expect(await raw.keys(`${prefixes.at(-1)}lock:*`)).toEqual([]);
      } finally {
        raw.disconnect();
      }
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('a transaction on keys this process wrote plus new ones is one round trip; a new key another instance wrote is read, not guessed absent', async () => {
    const a = await open();
    const b = await open(prefixes.at(-1));
    // Every command a's client sends (a transaction's scripts included) is one round trip.
    const client = (a as unknown as { redis: { sendCommand(cmd: { name: string }): unknown } }).redis;
    const sendCommand = client.sendCommand.bind(client);
    const sent: string[] = [];
    client.sendCommand = (cmd) => (sent.push(cmd.name), sendCommand(cmd));
    // A reservation's shape: the user's known account row, and the call's own new hold row.
    const hold = (s: RedisStorage, id: string) =>
      s.transact<number | 'replay'>(['acct', `hold:${id}`], (read) => {
        const balance = read<number>('acct')!;
        if (read(`hold:${id}`) !== undefined) return { writes: [], result: 'replay' };
        return {
          writes: [
            { op: 'set', key: 'acct', value: balance - 1 },
            { op: 'set', key: `hold:${id}`, value: 1 },
          ],
          result: balance,
        };
      });
    try {
      await a.transact(['acct'], () => ({ writes: [{ op: 'set', key: 'acct', value: 100 }], result: null }));
      sent.length = 0;
      expect(await hold(a, 'r1')).toBe(100);
      expect(await hold(a, 'r2')).toBe(99);
      expect(sent).toEqual(['evalsha', 'evalsha']);
      // Another instance wrote a hold this process never saw: the guess (absent) fails the
      // commit's check, and the plan runs again on what Redis holds.
      await b.transact(['hold:r3'], () => ({ writes: [{ op: 'set', key: 'hold:r3', value: 1 }], result: null }));
      sent.length = 0;
      expect(await hold(a, 'r3')).toBe('replay');
      expect(sent.length).toBeGreaterThan(1);
      expect(await b.get('acct')).toBe(98);
    } finally {
      client.sendCommand = sendCommand;
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('concurrent transactions on one hot key of one instance go out together: few round trips, exact balance, log and holds', async () => {
    const a = await open();
    const client = (a as unknown as { redis: { sendCommand(cmd: { name: string }): unknown } }).redis;
    const sendCommand = client.sendCommand.bind(client);
    let sent = 0;
    client.sendCommand = (cmd) => (sent++, sendCommand(cmd));
    const spend = (id: number) =>
      a.transact(['acct', `hold:${id}`], (read) => {
        const balance = read<number>('acct')!;
        if (balance < 1) throw new Error('insufficient');
        return {
          writes: [
            { op: 'set', key: 'acct', value: balance - 1 },
            { op: 'set', key: `hold:${id}`, value: balance },
            { op: 'append', log: 'spends', record: id },
          ],
          result: balance,
        };
      });
    try {
      await a.transact(['acct'], () => ({ writes: [{ op: 'set', key: 'acct', value: 1000 }], result: null }));
      sent = 0;
      const seen = await Promise.all(Array.from({ length: 100 }, (_, i) => spend(i)));
      // One by one, each would be a round trip of its own (100).
      expect(sent).toBeLessThan(30);
      expect(new Set(seen).size).toBe(100);
      expect(await a.get('acct')).toBe(900);
      expect((await a.readLog('spends')).length).toBe(100);
      // Against a balance for exactly 99 of 120: exactly 99 run, nothing goes below zero.
      await a.transact(['acct'], () => ({ writes: [{ op: 'set', key: 'acct', value: 99 }], result: null }));
      const outcomes = await Promise.allSettled(Array.from({ length: 120 }, (_, i) => spend(1000 + i)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(99);
      expect(await a.get('acct')).toBe(0);
      expect((await a.readLog('spends')).length).toBe(199);
      const holds = await a.getMany(Array.from({ length: 120 }, (_, i) => `hold:${1000 + i}`));
      expect(new Set(holds.filter((h) => h !== undefined)).size).toBe(99);
    } finally {
      client.sendCommand = sendCommand;
      await a.close();
    }
  });

  it('a lock left by a dead instance frees after its lease; a write outside transactions makes the transaction plan again', async () => {
    const a = await open();
    const prefix = prefixes.at(-1)!;
    const raw = new (await import('ioredis')).Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
    await raw.connect();
    try {
      await a.set('k', 1);
      // As if an instance died between its two round trips (kill -9): its lock stays until the lease ends.
      await raw.set(`${prefix}lock:k`, 'dead-instance', 'PX', 300);
      const started = Date.now();
      expect(
        await a.transact(['k'], (read) => ({
          writes: [{ op: 'set', key: 'k', value: read<number>('k')! + 1 }],
          result: read<number>('k'),
        })),
      ).toBe(1);
      // It waited for the 300 ms lease, and went on well before the 5 s lock wait would end (room for a loaded machine).
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(Date.now() - started).toBeLessThan(2500);
      // A plain set between the read and the commit: the commit refuses, the plan runs again on the new value.
      let runs = 0;
      const result = await a.transact(['k'], (read) => {
        runs++;
        // Same connection as the commit, so it reaches Redis first.
        if (runs === 1) void a.set('k', 10);
        return { writes: [{ op: 'set', key: 'k', value: read<number>('k')! + 1 }], result: read<number>('k') };
      });
      expect(runs).toBe(2);
      expect(result).toBe(10);
      expect(await a.get('k')).toBe(11);
      // A plan slower than the lease (a busy event loop), with nobody else after the keys: it commits without starting over.
      let slowRuns = 0;
      await a.transact(['k'], (read) => {
        slowRuns++;
        const until = Date.now() + 700;
        while (Date.now() < until);
        return { writes: [{ op: 'set', key: 'k', value: read<number>('k')! + 1 }], result: null };
      });
      expect(slowRuns).toBe(1);
      expect(await a.get('k')).toBe(12);
    } finally {
      raw.disconnect();
      await a.close();
    }
  });

  it('fails fast with UNAVAILABLE when Redis cannot be reached', async () => {
    const port = await freePort();
    const started = Date.now();
    const store = await RedisStorage.connect({ host: '127.0.0.1', port, keyPrefix: 'unreachable:' });
    try {
      const t0 = Date.now();
      await expectAppCode(store.get('k'), 'UNAVAILABLE');
      await expectAppCode(store.set('k', 1), 'UNAVAILABLE');
      await expectAppCode(store.increment('k', 1, { min: 0 }), 'UNAVAILABLE');
      await expectAppCode(store.append('log', 1), 'UNAVAILABLE');
      // Refused at once, well below the 2 s command timeout each would otherwise wait (room for a loaded machine).
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await store.health()).toMatchObject({ ok: false });
    } finally {
      await store.close();
    }
  });

  // With its data kept (AOF): a Redis that comes back empty is refused instead (billing/storeLost.test.ts).
  it.skipIf(!redisServer.ok)('recovers by itself when Redis stops and comes back', async () => {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), 'storage-redis-'));
    let server = await startRedisServer(port, dir);
    const store = await RedisStorage.connect({ host: '127.0.0.1', port, keyPrefix: 'restart:' });
    try {
      await store.set('k', 'before');
      expect(await store.get('k')).toBe('before');
      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      const t0 = Date.now();
      await expectAppCode(store.get('k'), 'UNAVAILABLE');
      // Refused at once, well below the 2 s command timeout (room for a loaded machine).
      expect(Date.now() - t0).toBeLessThan(1000);
      expect((await store.health()).ok).toBe(false);
      server = await startRedisServer(port, dir);
      expect(
        await waitFor(() => store.get('k').catch(() => undefined), {
          timeoutMs: 10_000,
          intervalMs: 100,
          what: 'a read after Redis came back',
        }),
      ).toBe('before');
      await waitFor(
        () =>
          store.set('k', 'after').then(
            () => true,
            (err: unknown) => {
              expect(err).toMatchObject({ appCode: 'UNAVAILABLE' });
              return false;
            },
          ),
        { timeoutMs: 10_000, intervalMs: 100, what: 'a write after Redis came back' },
      );
      expect(await store.get('k')).toBe('after');
      expect(await store.health()).toEqual({ ok: true });
    } finally {
      await store.close();
      server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses calls after close', async () => {
    const store = await open();
    await store.close();
    await expectAppCode(store.get('k'), 'UNAVAILABLE');
    expect((await store.health()).ok).toBe(false);
  });
});

describe.each(SQLITE_DRIVERS)('sqlite backend on %s', (driver) => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storage-sqlite-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('persists everything across close and reopen', async () => {
    const file = join(dir, 'data.db');
    const a = await SqliteStorage.open({ file, driver });
    await a.set('plain', { deep: [1, { two: 2 }] });
    await a.set('gone', 1);
    await a.delete('gone');
    await a.set('ttl', 'soon', { ttlMs: 1000 });
    await a.increment('ctr', 41);
    await a.increment('ctr', 1);
    expect(await a.compareAndSet('cas', undefined, 'x')).toBe(true);
    await a.append('ledger', { amount: 5 });
    await a.transact(['tx'], () => ({
      writes: [
        { op: 'set', key: 'tx', value: 1, dueAt: 5 },
        { op: 'append', log: 'ledger', record: { amount: -2 } },
      ],
      result: null,
    }));
    await a.close();

    const b = await SqliteStorage.open({ file, driver });
    try {
      expect(await b.get('plain')).toEqual({ deep: [1, { two: 2 }] });
      expect(await b.get('gone')).toBeUndefined();
      expect(await b.get('ttl')).toBe('soon');
      expect(await b.get('ctr')).toBe(42);
      expect(await b.get('cas')).toBe('x');
      expect(await b.dueKeys('', 10, 10)).toEqual(['tx']);
      expect(await b.readLog('ledger')).toEqual([
        { seq: 1, record: { amount: 5 } },
        { seq: 2, record: { amount: -2 } },
      ]);
      expect(await b.append('ledger', { amount: 1 })).toBe(3);
      await expired(b, 'ttl');
    } finally {
      await b.close();
    }
  });

  it('a file that is not a database, or a data folder that is a file, is refused naming the path', async () => {
    const garbage = join(dir, 'garbage.db');
    await writeFile(garbage, 'not a database '.repeat(20));
    await expect(SqliteStorage.open({ file: garbage, driver })).rejects.toThrow(
      `storage: cannot use the database file ${garbage}: file is not a database`,
    );
    const notDir = join(dir, 'a-file');
    await writeFile(notDir, '');
    await expect(SqliteStorage.open({ file: join(notDir, 'data.db'), driver })).rejects.toThrow(
      `storage: cannot create the folder ${notDir} for the database file`,
    );
  });

  it('refuses a second open of the same file while the first is open, with a clear message', async () => {
    const file = join(dir, 'data.db');
    const a = await SqliteStorage.open({ file, driver });
    try {
      await expectAppCode(SqliteStorage.open({ file, driver }), 'CONFLICT');
      await expect(SqliteStorage.open({ file, driver })).rejects.toThrow(/locked by another process/);
    } finally {
      await a.close();
    }
    const b = await SqliteStorage.open({ file, driver });
    await b.close();
  });

  it('refuses calls after close', async () => {
    const store = await SqliteStorage.open({ file: join(dir, 'data.db'), driver });
    await store.close();
    await expectAppCode(store.get('k'), 'UNAVAILABLE');
    await expectAppCode(store.set('k', 1), 'UNAVAILABLE');
  });
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

/** A throwaway redis-server of our own, so stopping it does not disturb the shared test Redis. */
/** A redis-server keeping every acknowledged write in `dir` (AOF, fsync always). */
async function startRedisServer(port: number, dir: string): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
  ];
  const child = spawn(redisServer.path!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.once('error', (err) => reject(new Error(`cannot start redis-server (run .ci/redis.sh): ${err.message}`)));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out.slice(-500)}`)));
  });
  return child;
}
