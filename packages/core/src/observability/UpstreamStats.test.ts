import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  dropTestKeys,
  dropTestSchema,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import { Stats } from '../runtime/Stats.js';
import { MemoryStorage } from '../storage/MemoryStorage.js';
import { RedisStorage } from '../storage/RedisStorage.js';
import { PostgresStorage } from '../storage/sql/PostgresStorage.js';
import { SqliteStorage } from '../storage/sql/SqliteStorage.js';
import type { Storage } from '../kernel/Storage.js';
import { MAX_PAIRS_PER_DAY, upstreamPercentile, UpstreamStats, UPSTREAM_BOUNDS_MS } from './UpstreamStats.js';

const redis = await testRedis();
const postgres = await testPostgres();

/** Two instances' stores on one backend (memory and SQLite: one store object shared, as one process would). */
const backends: Array<{ name: string; ok: boolean; open(): Promise<{ stores: [Storage, Storage]; cleanup(): Promise<void> }> }> = [
  {
    name: 'memory',
    ok: true,
    open: async () => {
      const s = new MemoryStorage();
      return { stores: [s, s], cleanup: async () => undefined };
    },
  },
  {
    name: 'sqlite',
    ok: true,
    open: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'upstream-stats-'));
      const s = await SqliteStorage.open({ file: join(dir, 'data.db') });
      return {
        stores: [s, s],
        cleanup: async () => {
          await s.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    ok: postgres.ok,
    open: async () => {
      const opts = testPostgresOptions(postgres, 'upstreamstats');
      const a = await PostgresStorage.connect(opts);
      const b = await PostgresStorage.connect(opts);
      return {
        stores: [a, b],
        cleanup: async () => {
          await a.close();
          await b.close();
          await dropTestSchema(postgres, opts.schema);
        },
      };
    },
  },
  {
    name: 'redis',
    ok: redis.ok,
    open: async () => {
      const opts = testRedisOptions(redis, 'upstreamstats');
      const a = await RedisStorage.connect(opts);
      const b = await RedisStorage.connect(opts);
      return {
        stores: [a, b],
        cleanup: async () => {
          await a.close();
          await b.close();
          await dropTestKeys(redis, opts.keyPrefix);
        },
      };
    },
  },
];

const today = () => new Date().toISOString().slice(0, 10);

for (const backend of backends) {
  describe.skipIf(!backend.ok)(`upstream statistics on ${backend.name}`, () => {
    it('two instances flushing the same day row at once lose no count; a reader gets calls, failures and latency buckets by provider/model', async () => {
      const { stores, cleanup } = await backend.open();
      try {
        const instances = stores.map((s) => {
          const upstream = new UpstreamStats();
          return { upstream, stats: new Stats(s, { upstream }) };
        });
        const flushes: Promise<void>[] = [];
        for (let i = 0; i < 100; i++) {
          for (const { upstream } of instances) {
            upstream.record('openai', 'gpt-4.1-mini', '2xx', 0.004); // bucket <= 5 ms
            if (i % 10 === 0) upstream.record('google', 'gemini-2.5-flash', '5xx', 0.2); // <= 250 ms
            if (i % 25 === 0) upstream.record('google', 'gemini-2.5-flash', 'network', undefined); // no answer, no latency
          }
          if (i % 20 === 0) for (const { stats } of instances) flushes.push(stats.flush());
        }
        await Promise.all(flushes);
        await Promise.all(instances.map(({ stats }) => stats.flush()));
        const [row] = await instances[1]!.stats.upstreamDays([today()]);
        expect(row!['openai/gpt-4.1-mini']).toMatchObject({ calls: 200, failures: 0 });
        expect(row!['google/gemini-2.5-flash']).toMatchObject({ calls: 20 + 8, failures: 28 });
        expect(upstreamPercentile(row!['openai/gpt-4.1-mini']!.buckets, 99)).toBe(5);
        expect(upstreamPercentile(row!['google/gemini-2.5-flash']!.buckets, 50)).toBe(250);
        // Only answered calls have a latency.
        expect(row!['google/gemini-2.5-flash']!.buckets.reduce((a, b) => a + b, 0)).toBe(20);
        // A day without calls is an empty row, not a scan.
        expect(await instances[0]!.stats.upstreamDays(['2020-01-01'])).toEqual([{}]);
      } finally {
        await cleanup();
      }
    });
  });
}

describe('UpstreamStats bounds', () => {
  it('a day row keeps at most MAX_PAIRS_PER_DAY provider/model pairs; the rest count under <provider>/other', async () => {
    const storage = new MemoryStorage();
    const upstream = new UpstreamStats();
    const stats = new Stats(storage, { upstream });
    for (let i = 0; i < MAX_PAIRS_PER_DAY + 50; i++) upstream.record('openai', `model-${i}`, '2xx', 0.1);
    await stats.flush();
    const [row] = await stats.upstreamDays([today()]);
    expect(Object.keys(row!)).toHaveLength(MAX_PAIRS_PER_DAY + 1);
    expect(row!['openai/other']!.calls).toBe(50);
  });

  it('percentiles are bucket upper bounds; above the last bound there is none', () => {
    const buckets = new Array(UPSTREAM_BOUNDS_MS.length + 1).fill(0);
    expect(upstreamPercentile(buckets, 50)).toBeNull();
    buckets[3] = 99;
    buckets[UPSTREAM_BOUNDS_MS.length] = 1;
    expect(upstreamPercentile(buckets, 50)).toBe(UPSTREAM_BOUNDS_MS[3]);
    expect(upstreamPercentile(buckets, 100)).toBeNull();
  });

  it('clearing the statistics drops the upstream counts not yet written', async () => {
    const storage = new MemoryStorage();
    const upstream = new UpstreamStats();
    const stats = new Stats(storage, { upstream });
    upstream.record('openai', 'm', '2xx', 0.1);
    stats.dropPending();
    await stats.flush();
    expect(await stats.upstreamDays([today()])).toEqual([{}]);
  });
});
