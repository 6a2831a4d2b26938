import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { dropTestKeys, rawTestClient, startPrivateRedis, testRedis, testRedisOptions, testService } from '@ai-backend/test-utils/services';
import { waitFor } from '@ai-backend/test-utils';
import { REDIS_FORMAT_VERSION, RedisStorage } from './RedisStorage.js';
import { commandsOf, fillUnrelated } from './__tests__/redisCommands.js';

const redis = await testRedis();
const redisServer = await testService('redis-server');

describe.skipIf(!redis.ok)("Redis per-owner index (an owner's listing reads its index, not the keyspace)", () => {
  const prefixes: string[] = [];
  const stores: RedisStorage[] = [];
  const raw = rawTestClient(redis);
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    raw.disconnect();
    for (const p of prefixes) await dropTestKeys(redis, p);
  });

  const newPrefix = () => {
    const { keyPrefix } = testRedisOptions(redis, 'owner-index');
    prefixes.push(keyPrefix);
    return keyPrefix;
  };
  const open = async (keyPrefix: string, formatCheckMs?: number) => {
    const store = await RedisStorage.connect({ ...testRedisOptions(redis), keyPrefix, ...(formatCheckMs ? { formatCheckMs } : {}) });
    stores.push(store);
    return store;
  };
  const connected = async () => {
    if (raw.status !== 'ready') await raw.connect();
    return raw;
  };

  /** `n` more unrelated keys under the prefix, on the shared test Redis unless told. */
  const fill = async (prefix: string, from: number, n: number, client?: Redis) =>
    fillUnrelated(client ?? (await connected()), prefix, from, n);

  it.skipIf(!redisServer.ok)("an owner's listing runs the same commands among 10 or 20,000 unrelated keys", async () => {
    const own = await startPrivateRedis();
    const client = rawTestClient(own);
    let store: RedisStorage | undefined;
    try {
      await client.connect();
      const prefix = 'flat:';
      store = await RedisStorage.connect({ host: own.host, port: own.port, keyPrefix: prefix });
      await waitFor(() => store!.ownerIndexBuilt(), { timeoutMs: 30_000, what: 'the new store built its index' });
      for (let i = 0; i < 5; i++) await store.set(`apikeyowner:u1:k${i}`, i);
      await fill(prefix, 0, 10, client);
      const list = () => store!.keys('apikeyowner:u1:');
      const small = await commandsOf(client, list);
      await fill(prefix, 10, 20_000, client);
      const large = await commandsOf(client, list);
      expect(large).toEqual(small);
      // One script: its range read and one existence check per listed key.
      expect(small).toEqual({ eval: 1, zrangebylex: 1, exists: 5 });
      expect((await list()).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `apikeyowner:u1:k${i}`));
    } finally {
      await store?.close();
      client.disconnect();
      await own.close();
    }
  });

  it('an expired key is not listed and leaves the index at the listing; an index of expiring keys expires with them', async () => {
    const prefix = newPrefix();
    const store = await open(prefix);
    // A new store's build scans the shared test Redis: the listing below reads the index once it is done.
    await waitFor(() => store.ownerIndexBuilt(), { timeoutMs: 30_000, what: 'the new store built its index' });
    await store.set('vault:u:kept', 1);
    await store.set('vault:u:brief', 1, { ttlMs: 20 });
    await waitFor(async () => (await store.get('vault:u:brief')) === undefined, { timeoutMs: 3000, what: 'vault:u:brief expired' });
    const client = await connected();
    expect(await client.zcard(`${prefix}idx:vault:u:`)).toBe(2);
    expect(await store.keys('vault:u:')).toEqual(['vault:u:kept']);
    expect(await client.zrange(`${prefix}idx:vault:u:`, '0', '-1')).toEqual(['vault:u:kept']);
    // An MCP session's workspaces (all expiring): their index does not outlive them.
    await store.set('ws:client:s1:w1', 1, { ttlMs: 60_000 });
    const pttl = await client.pttl(`${prefix}idx:ws:client:s1:`);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(60_000);
    await store.set('ws:client:s1:w2', 1);
    expect(await client.pttl(`${prefix}idx:ws:client:s1:`)).toBe(-1);
  });

  /** Keys as a format-1 release left them (no index, format mark 1), or a format-2 one (the owner index alone, built). */
  async function olderStore(prefix: string, format: 1 | 2 = 1): Promise<void> {
    const client = await connected();
    await client.set(`${prefix}format`, String(format));
    const owned = ['apikeyowner:u1:a', 'apikeyowner:u1:b', 'vault:u1:openai', 'ws:client:u1:w1', 'apikeyowner:u2:c'];
    for (const k of [...owned, 'ws:server:w1', 'alerts:outbox:d1', 'aicache:h1', 'stats:2026-12-01:rpc:p']) {
      await client.set(`${prefix}kv:${k}`, '1');
    }
    await client.set(`${prefix}kv:apikeyowner:u1:brief`, '1', 'PX', 600_000);
    await client.rpush(`${prefix}log:ledger:u1`, '{}');
    if (format === 2) {
      for (const k of [...owned, 'apikeyowner:u1:brief']) await client.zadd(`${prefix}idx:${k.slice(0, k.lastIndexOf(':') + 1)}`, 0, k);
      await client.set(`${prefix}listindex`, 'done');
    }
    await fill(prefix, 0, 100);
  }

  /** Every page of a paged listing (a SCAN's page may hold none of the keys before the index is built). */
  async function paged(list: (cursor: string | undefined) => Promise<{ keys?: string[]; logs?: string[]; cursor?: string }>) {
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list(cursor);
      all.push(...(page.keys ?? page.logs ?? []));
      cursor = page.cursor;
    } while (cursor !== undefined);
    return all;
  }

  /** What every listing of olderStore's keys must find, indexed or not. */
  async function expectOlderListed(s: RedisStorage): Promise<void> {
    expect((await s.keys('apikeyowner:u1:')).sort()).toEqual(['apikeyowner:u1:a', 'apikeyowner:u1:b', 'apikeyowner:u1:brief']);
    expect(await s.keys('vault:u1:')).toEqual(['vault:u1:openai']);
    expect(await paged((cursor) => s.listKeys('vault:', { cursor, limit: 10 }))).toEqual(['vault:u1:openai']);
    expect(await s.keys('ws:client:u1:')).toEqual(['ws:client:u1:w1']);
    expect(await s.keys('apikeyowner:u2:')).toEqual(['apikeyowner:u2:c']);
    expect(await s.keys('ws:server:')).toEqual(['ws:server:w1']);
    expect(await s.keys('alerts:outbox:')).toEqual(['alerts:outbox:d1']);
    expect(await s.keys('aicache:')).toEqual(['aicache:h1']);
    expect(await s.keys('stats:2026-12-01:')).toEqual(['stats:2026-12-01:rpc:p']);
    expect(await paged((cursor) => s.listLogs('ledger:', { cursor, limit: 10 }))).toEqual(['ledger:u1']);
  }

  it('a store of format 2 (owner index built): the other indexes are built after the grace; format-2 instances keep their owner index meanwhile', async () => {
    const prefix = newPrefix();
    await olderStore(prefix, 2);
    const store = await open(prefix, 300);
    const client = await connected();
    expect(await client.get(`${prefix}format`)).toBe(String(REDIS_FORMAT_VERSION));
    expect(await client.get(`${prefix}keyindex`)).toMatch(/^pending:\d+$/);
    // Format 2's mark is left as it was: its instances list through the owner index this release keeps whole.
    expect(await client.get(`${prefix}listindex`)).toBe('done');
    expect(await store.ownerIndexBuilt()).toBe(false);
    await expectOlderListed(store);
    await waitFor(() => store.ownerIndexBuilt(), { timeoutMs: 30_000, what: 'the index built after the grace' });
    await expectOlderListed(store);
    expect(await client.zrange(`${prefix}fidx:ws:server:`, '0', '-1')).toEqual(['ws:server:w1']);
    expect(await client.zrange(`${prefix}logindex`, '0', '-1')).toEqual(['ledger:u1']);
  });

  it('a store of format 1 lists correctly before its index is built (during the grace), and what this release writes is indexed meanwhile', async () => {
    const prefix = newPrefix();
    await olderStore(prefix);
    const store = await open(prefix, 60_000);
    const client = await connected();
    expect(await client.get(`${prefix}format`)).toBe(String(REDIS_FORMAT_VERSION));
    expect(await client.get(`${prefix}keyindex`)).toMatch(/^pending:\d+$/);
    expect(await store.ownerIndexBuilt()).toBe(false);
    await store.set('apikeyowner:u1:new', 1);
    expect((await store.keys('apikeyowner:u1:')).sort()).toEqual([
      'apikeyowner:u1:a',
      'apikeyowner:u1:b',
      'apikeyowner:u1:brief',
      'apikeyowner:u1:new',
    ]);
    expect(await client.zrange(`${prefix}idx:apikeyowner:u1:`, '0', '-1')).toEqual(['apikeyowner:u1:new']);
  });

  it('two instances starting together on a store of format 1: one builds the index, once; both list through it', async () => {
    const prefix = newPrefix();
    await olderStore(prefix);
    // Which client sends each command: the build is a SCAN of every key of the store.
    const send = vi.spyOn(Redis.prototype, 'sendCommand');
    const builders = () =>
      new Set(
        send.mock.calls.flatMap(([cmd], i) => (cmd.name === 'scan' && cmd.args.includes(`${prefix}*`) ? [send.mock.contexts[i]] : [])),
      );
    const [a, b] = await Promise.all([open(prefix, 100), open(prefix, 100)]);
    await waitFor(async () => (await a.ownerIndexBuilt()) && (await b.ownerIndexBuilt()), {
      timeoutMs: 30_000,
      what: 'the index built and seen by both',
    });
    expect(builders().size).toBe(1);
    for (const s of [a, b]) await expectOlderListed(s);
    const client = await connected();
    expect(await client.zcard(`${prefix}idx:apikeyowner:u1:`)).toBe(3);
    // The key with an expiry gave the index none (the others are persistent).
    expect(await client.pttl(`${prefix}idx:apikeyowner:u1:`)).toBe(-1);
    expect(await client.get(`${prefix}keyindex`)).toBe('done');
    // Recorded: a later start does not build again.
    const scansBefore = builders().size;
    const calls = send.mock.calls.length;
    await open(prefix, 100);
    expect(send.mock.calls.slice(calls).some(([cmd]) => cmd.name === 'scan')).toBe(false);
    expect(builders().size).toBe(scansBefore);
  });
});
