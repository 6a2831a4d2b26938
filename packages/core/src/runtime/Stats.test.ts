import { describe, expect, it } from 'vitest';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
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
    const [key] = await storage.keys('stats:');
    expect(await storage.get<{ count: number }>(key!)).toMatchObject({ count: 2 });
    await first;
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
