import type { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { dropTestKeys, rawTestClient, startPrivateRedis, testRedis, testRedisOptions, testService } from '@ai-backend/test-utils/services';
import { waitFor } from '@ai-backend/test-utils';
import { FAMILY_LISTED } from '../kernel/ownerListings.js';
import { RedisStorage } from './RedisStorage.js';
import { commandsOf, fillUnrelated } from './__tests__/redisCommands.js';

const redis = await testRedis();
const redisServer = await testService('redis-server');

describe.skipIf(!redis.ok)('Redis family and log indexes (a whole-family listing reads its index, not the keyspace)', () => {
  const prefixes: string[] = [];
  const stores: RedisStorage[] = [];
  const raw = rawTestClient(redis);
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    raw.disconnect();
    for (const p of prefixes) await dropTestKeys(redis, p);
  });

  const newPrefix = () => {
    const { keyPrefix } = testRedisOptions(redis, 'family-index');
    prefixes.push(keyPrefix);
    return keyPrefix;
  };
  const open = async (keyPrefix: string) => {
    const store = await RedisStorage.connect({ ...testRedisOptions(redis), keyPrefix });
    stores.push(store);
    return store;
  };
  const connected = async () => {
    if (raw.status !== 'ready') await raw.connect();
    return raw;
  };
  const fill = (prefix: string, from: number, n: number, client: Redis) => fillUnrelated(client, prefix, from, n);

  /** A store of its own on a redis-server of its own (commands counted there), its indexes built. */
  async function privateStore(): Promise<{ store: RedisStorage; client: Redis; close: () => Promise<void> }> {
    const own = await startPrivateRedis();
    const client = rawTestClient(own);
    await client.connect();
    const store = await RedisStorage.connect({ host: own.host, port: own.port, keyPrefix: 'flat:' });
    await waitFor(() => store.ownerIndexBuilt(), { timeoutMs: 30_000, what: 'the new store built its index' });
    return {
      store,
      client,
      close: async () => {
        await store.close();
        client.disconnect();
        await own.close();
      },
    };
  }

  /** Every listing callers make of the whole families (FAMILY_LISTED), a prefix inside one, and the logs retention archives. */
  const familyListings = (store: RedisStorage): Record<string, () => Promise<unknown>> => ({
    'getServerWorkspaces (ws:server:)': () => store.keys(FAMILY_LISTED.serverWorkspaces),
    'alert views (alerts:outbox:)': () => store.keys(FAMILY_LISTED.alertOutbox),
    'alert views, dead letters (alerts:dead:)': () => store.keys(FAMILY_LISTED.alertDead),
    'admin.clearCache (aicache:)': () => store.keys(FAMILY_LISTED.responseCache),
    'statistics reset (stats:, a page)': () => store.listKeys(FAMILY_LISTED.stats, { limit: 100 }),
    'statistics of a day (stats:<day>:)': () => store.keys(`${FAMILY_LISTED.stats}2026-12-01:`),
    'vault rotation (vault:, a page)': () => store.listKeys(FAMILY_LISTED.vault, { limit: 100 }),
    'retention (ledger: logs, a page)': () => store.listLogs('ledger:', { limit: 100 }),
  });

  it.skipIf(!redisServer.ok)(
    'every whole-family listing runs the same commands among 10 or 20,000 unrelated keys, never a SCAN',
    async () => {
      const { store, client, close } = await privateStore();
      const prefix = 'flat:';
      try {
        for (let i = 0; i < 3; i++) {
          await store.set(`${FAMILY_LISTED.serverWorkspaces}w${i}`, i);
          await store.transact([], () => ({
            writes: [{ op: 'set', key: `${FAMILY_LISTED.alertOutbox}d${i}`, value: i, dueAt: Date.now() + 60_000 }],
            result: undefined,
          }));
          await store.set(`${FAMILY_LISTED.alertDead}d${i}`, i);
          await store.set(`${FAMILY_LISTED.responseCache}h${i}`, i, { ttlMs: 600_000 });
          await store.increment(`${FAMILY_LISTED.responseCache}bytes:${i}`, 10, { ttlMs: 600_000 });
          await store.set(`${FAMILY_LISTED.stats}2026-12-01:rpc:p${i}`, i, { ttlMs: 600_000 });
          await store.set(`${FAMILY_LISTED.vault}u${i}:openai`, i);
          await store.append(`ledger:u${i}`, { i });
          await store.append(`usage:u${i}`, { i });
        }
        await fill(prefix, 0, 10, client);
        const listings = Object.entries(familyListings(store));
        const small: Record<string, Record<string, number>> = {};
        for (const [name, list] of listings) small[name] = await commandsOf(client, list);
        await fill(prefix, 10, 20_000, client);
        for (const [name, list] of listings) {
          expect(await commandsOf(client, list), name).toEqual(small[name]);
          expect(small[name], name).not.toHaveProperty('scan');
        }
        expect((await store.keys(FAMILY_LISTED.responseCache)).sort()).toEqual(
          ['bytes:0', 'bytes:1', 'bytes:2', 'h0', 'h1', 'h2'].map((k) => FAMILY_LISTED.responseCache + k),
        );
        expect((await store.listLogs('ledger:', { limit: 2 })).logs).toEqual(['ledger:u0', 'ledger:u1']);
        const first = await store.listKeys(FAMILY_LISTED.vault, { limit: 2 });
        expect(first.keys).toEqual(['vault:u0:openai', 'vault:u1:openai']);
        expect((await store.listKeys(FAMILY_LISTED.vault, { cursor: first.cursor, limit: 2 })).keys).toEqual(['vault:u2:openai']);
      } finally {
        await close();
      }
    },
  );

  it.skipIf(!redisServer.ok)(
    "a family's whole listing goes a page (1,000 keys) per script, so a large family never holds Redis",
    async () => {
      const { store, client, close } = await privateStore();
      try {
        const cache = FAMILY_LISTED.responseCache;
        for (let i = 0; i < 2500; i += 500) {
          await Promise.all(
            Array.from({ length: 500 }, (_, j) => store.set(`${cache}${String(i + j).padStart(4, '0')}`, 1, { ttlMs: 600_000 })),
          );
        }
        let listed: string[] = [];
        const commands = await commandsOf(client, async () => {
          listed = await store.keys(cache);
        });
        expect(listed).toHaveLength(2500);
        expect(new Set(listed).size).toBe(2500);
        expect(commands).toEqual({ eval: 3, zrangebylex: 3, exists: 2500 });
      } finally {
        await close();
      }
    },
  );

  it('a family index drops expired keys as its family is written, without a listing; a listing drops what it finds gone', async () => {
    const prefix = newPrefix();
    const store = await open(prefix);
    await waitFor(() => store.ownerIndexBuilt(), { timeoutMs: 30_000, what: 'the new store built its index' });
    const cache = FAMILY_LISTED.responseCache;
    const client = await connected();
    const fidx = `${prefix}fidx:${cache}`;
    const fexp = `${prefix}fexp:${cache}`;
    await store.set(`${cache}brief`, 1, { ttlMs: 20 });
    await store.set(`${cache}kept`, 1);
    expect(await client.zrange(fexp, '0', '-1')).toEqual([`${cache}brief`]);
    await waitFor(async () => (await store.get(`${cache}brief`)) === undefined, { timeoutMs: 3000, what: 'the entry expired' });
    // The next write of the family prunes it (a cache nobody empties does not keep its expired keys).
    await store.set(`${cache}next`, 1, { ttlMs: 600_000 });
    expect((await client.zrange(fidx, '0', '-1')).sort()).toEqual([`${cache}kept`, `${cache}next`]);
    expect(await client.zrange(fexp, '0', '-1')).toEqual([`${cache}next`]);
    // Made persistent: no longer in the expiry set. Deleted outside the store: dropped by the listing.
    await store.set(`${cache}next`, 2);
    expect(await client.zcard(fexp)).toBe(0);
    await client.del(`${prefix}kv:${cache}kept`);
    expect(await store.keys(cache)).toEqual([`${cache}next`]);
    expect(await client.zrange(fidx, '0', '-1')).toEqual([`${cache}next`]);
    expect(await store.delete(`${cache}next`)).toBe(true);
    expect(await client.exists(fidx)).toBe(0);
  });
});
