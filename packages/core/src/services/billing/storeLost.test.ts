import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import {
  dropTestKeys,
  dropTestSchema,
  rawTestClient,
  runTestSql,
  testPostgres,
  testPostgresOptions,
  startPrivateRedis,
  testRedis,
  testRedisOptions,
  testService,
  type PrivateServer,
} from '@ai-backend/test-utils/services';
import type { Runtime } from '../../runtime/Runtime.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createRuntime } from '../../createRuntime.js';
import { createLogger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import { RedisStorage, type RedisStorageOptions } from '../../storage/RedisStorage.js';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import { alice, makeRuntime } from './__tests__/kit.js';

/**
 * The store's data disappears under running servers (Redis without persistence restarted, a
 * FLUSHALL, the keys deleted): the servers notice and refuse money operations with 503 and one
 * error line, instead of starting every balance, hold and ledger again from nothing.
 */

const redis = await testRedis();
const postgres = await testPostgres();
const redisServer = await testService('redis-server');
const USAGE = { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini' };
const LOST = /not the data this server started with/;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(opts: RedisStorageOptions, logs: string[] = []): Promise<{ rt: Runtime; store: RedisStorage }> {
  const store = await RedisStorage.connect(opts);
  return { rt: await runtimeOn(store, logs), store };
}

async function runtimeOn(store: Storage, logs: string[] = []): Promise<Runtime> {
  const rt = await makeRuntime(store, {}, logs);
  cleanups.push(() => rt.close());
  return rt;
}

describe.skipIf(!redis.ok)('Redis data lost under running servers', () => {
  function options(): RedisStorageOptions & { keyPrefix: string } {
    const opts = testRedisOptions(redis, 'lost');
    cleanups.push(() => dropTestKeys(redis, opts.keyPrefix));
    return opts;
  }

  it('the keys deleted while a call holds tokens: its settle, new reserves and credits answer 503; nothing is written; one error line', async () => {
    const opts = options();
    const logs: string[] = [];
    const { rt } = await server(opts, logs);
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'held-1' });

    await dropTestKeys(redis, opts.keyPrefix); // what FLUSHALL or an empty restart does to this store's keys

    // Without the check, the settle found no hold and charged an empty account (a free call, the
    // account and ledger started from nothing), and the reserve below answered PAYMENT_REQUIRED
    // from a balance of 0. Now the settle meets a 503 and waits in the process, as in an outage
    // (billing.md, "Storage outages"): the caller has its answer, nothing is written.
    await rt.billing.settle(r, USAGE);
    expect(rt.billing.pendingCloses()).toBe(1);
    await expect(rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'held-2' })).rejects.toMatchObject({
      appCode: 'UNAVAILABLE',
    });
    await expect(
      rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' }),
    ).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    await expect(rt.billing.balances(alice.sub)).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    expect((await rt.storage.health()).detail).toMatch(LOST);
    expect(logs.filter((l) => l.includes('storage: refusing every call'))).toHaveLength(1);

    const client = rawTestClient(redis);
    await client.connect();
    try {
      expect(await client.keys(`${opts.keyPrefix}kv:*`)).toEqual([]);
      expect(await client.keys(`${opts.keyPrefix}log:*`)).toEqual([]);
      expect(await client.get(`${opts.keyPrefix}storeid`)).toBe('lost');
    } finally {
      client.disconnect();
    }
    // A server started now refuses to start; deleting the key (an empty store on purpose) lets it.
    await expect(RedisStorage.connect(opts)).rejects.toMatchObject({ appCode: 'CONFLICT', message: expect.stringMatching(/lost/) });
    const client2 = rawTestClient(redis);
    await client2.connect();
    await client2.del(`${opts.keyPrefix}storeid`);
    client2.disconnect();
    const fresh = await RedisStorage.connect(opts);
    cleanups.push(() => fresh.close());
    expect(await fresh.health()).toEqual({ ok: true });
  });

  it('a server started afresh on the emptied keys before the running ones noticed: both refuse from the next transaction on', async () => {
    const opts = options();
    const { rt: first } = await server(opts);
    await first.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await dropTestKeys(redis, opts.keyPrefix);
    const { rt: second } = await server(opts); // writes a new identity on the empty keys
    await expect(first.billing.reserve({ identity: alice, tokens: 100, requestId: 'a' })).rejects.toMatchObject({
      appCode: 'UNAVAILABLE',
      message: expect.stringMatching(/another server started it afresh/),
    });
    await expect(second.billing.reserve({ identity: alice, tokens: 100, requestId: 'b' })).rejects.toMatchObject({
      appCode: 'UNAVAILABLE',
      message: expect.stringMatching(/a server found its data lost/),
    });
  });

  it('an untouched store keeps serving, across a second server starting on it', async () => {
    const opts = options();
    const { rt: first } = await server(opts);
    await first.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const { rt: second } = await server(opts);
    const r = await second.billing.reserve({ identity: alice, tokens: 100, requestId: 'c' });
    await first.billing.settle(r, USAGE);
    expect((await second.billing.balances(alice.sub)).subscription).toBe(945);
  });
});

describe.skipIf(!redis.ok)('a Redis beside the store (shared: redis) coming back empty', () => {
  // Its state is hot and short-lived (rate-limit windows, route cooldowns, sessions: operations.md,
  // "Redis beside the store": durable state is not in it), so it may run without persistence: its
  // keys gone is no lost store. Before, the identity check refused it for good, and the next
  // server refused to start on it.
  it('is not refused: the running server goes on with it, and another server starts on it', async () => {
    const opts = testRedisOptions(redis, 'lost-shared');
    cleanups.push(() => dropTestKeys(redis, opts.keyPrefix));
    const config = resolveConfig({ storage: { type: 'memory', shared: 'redis', redis: opts } });
    const logger = createLogger('silent');
    const first = await createRuntime(config, { logger });
    cleanups.push(() => first.close());
    const bump = (rt: Runtime) =>
      rt.shared.transact(['n'], (read) => {
        const n = (read<number>('n') ?? 0) + 1;
        return { writes: [{ op: 'set', key: 'n', value: n }], result: n };
      });
    expect(await bump(first)).toBe(1);
    await dropTestKeys(redis, opts.keyPrefix); // an empty restart of a Redis without persistence
    expect(await bump(first)).toBe(1);
    expect(await first.shared.health()).toEqual({ ok: true });
    const second = await createRuntime(config, { logger });
    cleanups.push(() => second.close());
    expect(await bump(second)).toBe(2);
  });
});

describe.skipIf(!redisServer.ok)('a Redis without persistence restarting empty under a running server', () => {
  let priv: PrivateServer | undefined;
  afterEach(async () => {
    await priv?.close();
    priv = undefined;
  });

  it('is noticed at the reconnect, before any call: health down, the next call 503', { timeout: 30_000 }, async () => {
    priv = await startPrivateRedis();
    const opts = { host: priv.host, port: priv.port, keyPrefix: 'restart:', formatCheckMs: 3_600_000 };
    const logs: string[] = [];
    const { rt } = await server(opts, logs);
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    // An empty restart as the clients see it: every key gone, every connection dropped.
    const client = rawTestClient(priv);
    await client.connect();
    await client.flushall();
    await client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    client.disconnect();
    await waitFor(async () => LOST.test((await rt.storage.health()).detail ?? ''), {
      timeoutMs: 10_000,
      intervalMs: 50,
      what: 'health down, saying the data is lost, after the restart',
    });
    await expect(rt.billing.balances(alice.sub)).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: expect.stringMatching(LOST) });
    expect(logs.some((l) => l.includes('storage: refusing every call'))).toBe(true);
  });
});

describe.skipIf(!postgres.ok)('a PostgreSQL schema dropped under running servers', () => {
  const PG_LOST = /is not the one this server started with/;
  function options(schemaCheckMs = 3_600_000) {
    const opts = { ...testPostgresOptions(postgres, 'lost'), schemaCheckMs };
    cleanups.push(() => dropTestSchema(postgres, opts.schema));
    return opts;
  }

  it('and created again, empty, by a server starting: the running one refuses money operations with 503 and one error line', async () => {
    const opts = options();
    const logs: string[] = [];
    const rt = await runtimeOn(await PostgresStorage.connect(opts), logs);
    await rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'pg-held-1' });

    await runTestSql(postgres, `DROP SCHEMA "${opts.schema}" CASCADE`);
    const fresh = await PostgresStorage.connect(opts); // another server's start creates the schema again, empty
    cleanups.push(() => fresh.close());

    // Without the check, the settle charged the empty account in full (a free call) and the
    // credit below was applied again on the empty ledger.
    await rt.billing.settle(r, USAGE);
    expect(rt.billing.pendingCloses()).toBe(1);
    await expect(
      rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' }),
    ).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: expect.stringMatching(PG_LOST) });
    await expect(rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'pg-held-2' })).rejects.toMatchObject({
      appCode: 'UNAVAILABLE',
    });
    expect((await rt.storage.health()).detail).toMatch(/dropped and created again/);
    expect(logs.filter((l) => l.includes('storage: refusing every call'))).toHaveLength(1);
    expect(await runTestSql(postgres, `SELECT count(*)::int AS n FROM "${opts.schema}".kv`)).toEqual([{ n: 0 }]);
  });

  it('and not created again: the schema check says so (before, every call failed as an outage while health said ok)', async () => {
    const opts = options(50);
    const store = await PostgresStorage.connect(opts);
    cleanups.push(() => store.close());
    await store.set('k', 1);
    await runTestSql(postgres, `DROP SCHEMA "${opts.schema}" CASCADE`);
    await waitFor(async () => /its table kv is gone/.test((await store.health()).detail ?? ''), {
      timeoutMs: 5_000,
      intervalMs: 20,
      what: 'health saying the schema is gone',
    });
    await expect(store.get('k')).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: expect.stringMatching(PG_LOST) });
  });
});
