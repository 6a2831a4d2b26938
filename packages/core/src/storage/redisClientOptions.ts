import type { RedisOptions } from 'ioredis';

/** Where a Redis is and how to reach it (the `storage.redis` config section). */
export interface RedisConnectOptions {
  host: string;
  port: number;
  password?: string;
  db?: number;
  tls?: boolean;
}

/**
 * The connection behaviour every Redis client of ours shares: connect explicitly, fail fast while
 * Redis is down (no offline queue, no retried commands) and reconnect forever in the background,
 * backing off to one attempt every 2 s.
 */
export function redisClientOptions(opts: RedisConnectOptions): RedisOptions {
  return {
    host: opts.host,
    port: opts.port,
    password: opts.password,
    db: opts.db ?? 0,
    tls: opts.tls ? {} : undefined,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  };
}
