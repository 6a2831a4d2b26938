import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RedisStorageOptions } from './RedisStorage.js';

/**
 * The Redis every test uses: 127.0.0.1:6379 (.ci/redis.sh starts one when none answers).
 * Tests on the redis backend call requireTestRedis() first, so a missing Redis fails them
 * with a clear message instead of silently skipping them.
 */
export const TEST_REDIS = { host: '127.0.0.1', port: 6379 } as const;

/** Connect options with a key prefix unique to this test run, so parallel runs never collide. */
export function testRedisOptions(label = 'storage'): RedisStorageOptions & { keyPrefix: string } {
  return { ...TEST_REDIS, db: 0, tls: false, keyPrefix: `ai-backend-test:${label}:${process.pid}:${randomUUID().slice(0, 8)}:` };
}

function rawClient(): Redis {
  return new Redis({
    ...TEST_REDIS,
    lazyConnect: true,
    connectTimeout: 2000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
}

/** Throw (never skip) when the test Redis does not answer PING. */
export async function requireTestRedis(): Promise<void> {
  const client = rawClient();
  client.on('error', () => undefined);
  try {
    await client.connect();
    const pong = await client.ping();
    if (pong !== 'PONG') throw new Error(`unexpected reply ${String(pong)}`);
  } catch (err) {
    throw new Error(
      `The test Redis at ${TEST_REDIS.host}:${TEST_REDIS.port} did not answer PING (${(err as Error).message}). ` +
        'Start one with .ci/redis.sh: the redis storage tests fail rather than skip.',
    );
  } finally {
    client.disconnect();
  }
}

/** Delete every key under a test prefix; returns how many were removed. */
export async function dropTestKeys(keyPrefix: string): Promise<number> {
  const client = rawClient();
  client.on('error', () => undefined);
  try {
    await client.connect();
    let removed = 0;
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) removed += await client.unlink(...keys);
    } while (cursor !== '0');
    return removed;
  } finally {
    client.disconnect();
  }
}
