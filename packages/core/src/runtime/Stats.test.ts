import { describe, expect, it } from 'vitest';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { CoreError } from '../kernel/CoreError.js';
import { UpstreamStats } from '../observability/UpstreamStats.js';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import { RedisStorage } from '../storage/RedisStorage.js';
import { Stats } from './Stats.js';

describe('Stats.flush', () => {
  it('asked for while a write is under way, it also writes what was counted after that write began', async () => {
    const storage = new MemoryStorage();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Hold the first write at its transaction so a second flush is asked for meanwhile.
    const transact = storage.transact.bind(storage);
    let held = false;
    storage.transact = (async (...args: Parameters<typeof transact>) => {
      if (!held) {
        held = true;
        await gate;
      }
      return transact(...args);
    }) as typeof storage.transact;
    const stats = new Stats(storage);
    stats.record('rpc', 'mcp.echo', 3, false);
    const first = stats.flush();
    stats.record('rpc', 'mcp.echo', 4, false);
    const second = stats.flush();
    release();
    await second;
    // Read the store itself (a snapshot would flush again and hide a missed count).
    const day = new Date().toISOString().slice(0, 10);
    expect(await storage.get<{ count: number }>(`stats:${day}:rpc:mcp.echo`)).toMatchObject({ count: 2 });
    await first;
  });
});

describe('Stats during a store outage', () => {
  it('upstream rows failing while the records are still being written: one rejected flush, no unhandled rejection, counts kept', async () => {
    const storage = new MemoryStorage();
    const down = () => new CoreError('UNAVAILABLE', 'storage unavailable');
    // The upstream rows' transaction fails at once; the records' first read (the index marker) a little later.
    storage.transact = (async () => {
      throw down();
    }) as typeof storage.transact;
    // Each read tells `failed` when it has rejected (the read itself is left to the store's caller to handle).
    const failed: Promise<void>[] = [];
    storage.get = (() =>
      new Promise<never>((_, reject) => {
        failed.push(new Promise<void>((done) => setTimeout(() => (reject(down()), done()), 20)));
      })) as typeof storage.get;
    const upstream = new UpstreamStats();
    upstream.record('openai', 'gpt-5-mini', 'ok', 0.1);
    const stats = new Stats(storage, { upstream });
    stats.record('rpc', 'mcp.echo', 3, false);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(stats.flush()).rejects.toThrow('storage unavailable');
      // Every failing read has failed, and Node reports unhandled rejections before the next macrotask.
      await Promise.all(failed);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    // A server process ends on an unhandled rejection (the chaos test's instances did).
    expect(unhandled).toEqual([]);
    expect(upstream.hasPending).toBe(true);
  });
});

const redis = await testRedis();

describe.skipIf(!redis.ok)('Stats across three instances on one Redis', () => {
  it('concurrent flushes of the same rows from three instances lose no count', async () => {
    const opts = testRedisOptions(redis, 'stats3');
    const stores = await Promise.all([0, 1, 2].map(() => RedisStorage.connect(opts)));
    try {
      const stats = stores.map((s) => new Stats(s));
      const flushes: Promise<void>[] = [];
      for (let i = 0; i < 300; i++) {
        for (const st of stats) st.record('rpc', i % 2 ? 'mcp.echo' : 'ai.generateText', 3, i % 10 === 0);
        if (i % 5 === 0) for (const st of stats) flushes.push(st.flush());
      }
      await Promise.all(flushes);
      await Promise.all(stats.map((st) => st.flush()));
      const snap = await stats[0]!.snapshot(1);
      expect(snap.total).toBe(900);
      expect(snap.errors).toBe(90);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await dropTestKeys(redis, opts.keyPrefix);
    }
  });
});

/** A store that counts its key listings (a SCAN of the whole keyspace on Redis). */
function countingListings(storage: MemoryStorage): { storage: MemoryStorage; listings: () => number } {
  let n = 0;
  const keys = storage.keys.bind(storage);
  storage.keys = (async (prefix: string) => {
    n++;
    return keys(prefix);
  }) as typeof storage.keys;
  return { storage, listings: () => n };
}

describe('Stats reads records by key, never by listing keys', () => {
  it('an idle flush (nothing counted since the last) does not touch the store', async () => {
    const storage = new MemoryStorage();
    let operations = 0;
    for (const op of ['get', 'getMany', 'set', 'keys', 'transact', 'compareAndSet'] as const) {
      const real = (storage[op] as (...a: unknown[]) => unknown).bind(storage);
      (storage as unknown as Record<string, unknown>)[op] = (...a: unknown[]) => (operations++, real(...a));
    }
    const stats = new Stats(storage);
    await stats.flush();
    await stats.flush();
    expect(operations).toBe(0);
    stats.record('rpc', 'mcp.echo', 3, false);
    await stats.flush();
    expect(operations).toBeGreaterThan(0);
    const after = operations;
    await stats.flush();
    expect(operations).toBe(after);
  });

  it('an instance that has written nothing reads by key too: one listing in all (the index marker), none on later reads', async () => {
    const { storage, listings } = countingListings(new MemoryStorage());
    const writer = new Stats(storage);
    writer.record('rpc', 'mcp.echo', 3, false);
    await writer.flush();
    const reader = new Stats(countingListings(storage).storage);
    const before = listings();
    expect((await reader.snapshot(7)).total).toBe(1);
    expect(listings()).toBe(before);
    const fresh = countingListings(new MemoryStorage());
    const idle = new Stats(fresh.storage);
    expect((await idle.snapshot(7)).total).toBe(0);
    expect(fresh.listings()).toBe(1);
    await idle.snapshot(7);
    expect(fresh.listings()).toBe(1);
  });

  it("a read after the first flush lists no keys, whatever else the store holds; two instances' records are all found", async () => {
    const { storage, listings } = countingListings(new MemoryStorage());
    const a = new Stats(storage);
    const b = new Stats(storage);
    a.record('rpc', 'mcp.echo', 3, false);
    b.record('mcp', 'ai.generateText', 30, true);
    await Promise.all([a.flush(), b.flush()]);
    for (let i = 0; i < 1000; i++) await storage.set(`idem:user:credit:${i}`, 1); // the keyspace grows
    const before = listings();
    const snap = await b.snapshot(7);
    expect(listings()).toBe(before);
    expect(snap.total).toBe(2);
    expect(snap.byDayEntry.map((e) => e.transport)).toEqual(['mcp', 'rpc']);
  });

  it('records written before the index existed (an older version) are still read, by listing, until the retention passes', async () => {
    const storage = new MemoryStorage();
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const legacy = { count: 5, errors: 0, totalMs: 5, buckets: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] };
    await storage.set(`stats:${day(-3)}:rpc:mcp.echo`, legacy);
    await storage.set(`stats:${day(0)}:rpc:mcp.echo`, legacy);
    const stats = new Stats(storage);
    stats.record('rpc', 'mcp.echo', 1, false);
    expect((await stats.snapshot(7)).total).toBe(11);
    // Past the retention after the index began, the listing is no longer needed (legacy records expired).
    const later = new Stats(storage, { now: () => Date.now() + 91 * 86_400_000 });
    const { listings } = countingListings(storage);
    await later.snapshot(7);
    expect(listings()).toBe(0);
  });

  it('days the index does not cover are listed one day at a time (a range per day), never the whole stats prefix', async () => {
    const storage = new MemoryStorage();
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const legacy = { count: 5, errors: 0, totalMs: 5, buckets: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] };
    await storage.set(`stats:${day(-2)}:rpc:mcp.echo`, legacy);
    // Records of days outside the window: a listing of the whole prefix would walk them all.
    for (let i = 10; i < 40; i++) await storage.set(`stats:${day(-i)}:rpc:mcp.echo`, legacy);
    const first = new Stats(storage);
    await first.snapshot(7); // writes the index marker (its one whole-prefix listing, once per store)
    const prefixes: string[] = [];
    const keys = storage.keys.bind(storage);
    storage.keys = async (prefix: string) => (prefixes.push(prefix), keys(prefix));
    expect((await new Stats(storage).snapshot(7)).total).toBe(5);
    expect(prefixes.length).toBeGreaterThan(0);
    expect(prefixes.every((p) => /^stats:\d{4}-\d\d-\d\d:$/.test(p))).toBe(true);
    expect(prefixes.length).toBeLessThanOrEqual(7);
  });

  it('a clear on another instance: this instance puts its next records back in the day lists (at once when told, else within a minute)', async () => {
    let now = Date.now();
    const storage = new MemoryStorage();
    const a = new Stats(storage, { now: () => now });
    const b = new Stats(storage, { now: () => now });
    b.record('rpc', 'mcp.echo', 1, false);
    await b.flush();
    await a.reset();
    // b was not told (no signals): within the minute its record is written without joining the list...
    b.record('rpc', 'mcp.echo', 1, false);
    await b.flush();
    now += 61_000;
    b.record('rpc', 'mcp.echo', 1, false);
    await b.flush();
    // ...and after it, the name is listed again: both records since the clear are read.
    expect((await a.snapshot(2)).total).toBe(2);
    // Told (admin.clearCache through the signals): at once.
    await a.reset();
    b.dropPending();
    b.record('rpc', 'mcp.echo', 1, false);
    await b.flush();
    expect((await a.snapshot(2)).total).toBe(1);
  });

  it('reset deletes the stored records a page at a time (more than a page), never one listing of every key', async () => {
    const storage = new MemoryStorage();
    const stats = new Stats(storage);
    stats.record('rpc', 'mcp.echo', 1, false);
    await stats.flush();
    for (let i = 0; i < 1200; i++) await storage.set(`stats:2026-01-01:rpc:p${i}`, { count: 1 });
    const keys = storage.keys.bind(storage);
    const listed: string[] = [];
    storage.keys = async (prefix: string) => (listed.push(prefix), keys(prefix));
    await stats.reset();
    expect(listed).toEqual([]);
    storage.keys = keys;
    expect((await storage.keys('stats:')).filter((k) => k.startsWith('stats:2026-01-01'))).toEqual([]);
    expect((await stats.snapshot(1)).total).toBe(0);
  });
});
