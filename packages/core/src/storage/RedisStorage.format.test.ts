import { afterEach, describe, expect, it } from 'vitest';
import { dropTestKeys, rawTestClient, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { waitFor } from '@ai-backend/test-utils';
import { REDIS_FORMAT_VERSION, RedisStorage } from './RedisStorage.js';

const redis = await testRedis();

describe.skipIf(!redis.ok)('Redis format mark while running', () => {
  const opened: Array<{ store: RedisStorage; prefix: string }> = [];
  afterEach(async () => {
    for (const { store, prefix } of opened.splice(0)) {
      await store.close();
      await dropTestKeys(redis, prefix);
    }
  });

  async function open(formatCheckMs: number) {
    const opts = { ...testRedisOptions(redis, 'format'), formatCheckMs };
    const store = await RedisStorage.connect(opts);
    opened.push({ store, prefix: opts.keyPrefix });
    return { store, prefix: opts.keyPrefix };
  }

  async function setMark(prefix: string, value: string) {
    const client = rawTestClient(redis);
    await client.connect();
    try {
      await client.set(`${prefix}format`, value);
    } finally {
      client.disconnect();
    }
  }

  it('a newer release marking the keys while this one runs: every call answers 503 saying why, health is down', async () => {
    const { store, prefix } = await open(50);
    await store.set('k', 1);
    expect(await store.get('k')).toBe(1);
    await setMark(prefix, String(REDIS_FORMAT_VERSION + 1));
    await waitFor(async () => !(await store.health()).ok, { timeoutMs: 3000, intervalMs: 20, what: 'health down after the newer mark' });
    expect((await store.health()).detail).toContain(
      `written by a newer release of ai-backend (format version ${REDIS_FORMAT_VERSION + 1}; this release knows up to ${REDIS_FORMAT_VERSION})`,
    );
    for (const call of [
      store.get('k'),
      store.set('k', 2),
      store.append('log', { a: 1 }),
      store.transact(['k'], () => ({ writes: [{ op: 'set', key: 'k', value: 3 }], result: null })),
    ]) {
      await expect(call).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: expect.stringMatching(/newer release/) });
    }
    // Nothing this release wrote after the mark changed.
    const client = rawTestClient(redis);
    await client.connect();
    expect(await client.get(`${prefix}kv:k`)).toBe('1');
    client.disconnect();
  });

  it('the same format mark rewritten (an instance of this release starting) changes nothing', async () => {
    const { store, prefix } = await open(50);
    await setMark(prefix, String(REDIS_FORMAT_VERSION));
    // A deliberate pause: several 50 ms checks run (asserting none takes the store down).
    await new Promise((r) => setTimeout(r, 200));
    expect(await store.health()).toEqual({ ok: true });
    await store.set('k', 1);
    expect(await store.get('k')).toBe(1);
  });
});
