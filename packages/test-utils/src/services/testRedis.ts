import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { testService } from './testService.js';

/** Where the test Redis answers: 127.0.0.1:6379, or the private redis-server the run started. */
export interface TestRedis {
  ok: boolean;
  host: string;
  port: number;
}

/**
 * The test Redis for this file (top-level await). When `ok` is false the file's redis suites
 * skip (`describe.skipIf(!redis.ok)`) and the run's last line says so; CI
 * (AI_BACKEND_REQUIRE_SERVICES=1) fails instead.
 */
export async function testRedis(): Promise<TestRedis> {
  const status = await testService('redis');
  return { ok: status.ok, host: status.host ?? '127.0.0.1', port: status.port ?? 6379 };
}

/** Connect options with a key prefix unique to this test run, so parallel runs never collide. */
export function testRedisOptions(redis: Pick<TestRedis, 'host' | 'port'>, label = 'storage') {
  return {
    host: redis.host,
    port: redis.port,
    db: 0,
    tls: false as const,
    keyPrefix: `ai-backend-test:${label}:${process.pid}:${randomUUID().slice(0, 8)}:`,
  };
}

/** A plain ioredis client that never retries and never prints "[ioredis] Unhandled error event". */
export function rawTestClient(redis: Pick<TestRedis, 'host' | 'port'>): Redis {
  const client = new Redis({
    host: redis.host,
    port: redis.port,
    lazyConnect: true,
    connectTimeout: 2000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined); // failures surface as rejected commands
  return client;
}

/** Delete every key under a test prefix; returns how many were removed. */
export async function dropTestKeys(redis: Pick<TestRedis, 'host' | 'port'>, keyPrefix: string): Promise<number> {
  const client = rawTestClient(redis);
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
