import { z } from 'zod';

/** Redis connection options (spec: oauth.sessionStorage.redis). */
export const RedisOptionsSchema = z
  .strictObject({
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(1).max(65535).default(6379),
    password: z.string().optional(),
    db: z.number().int().min(0).default(0),
    keyPrefix: z.string().default('ai-backend:'),
    tls: z.boolean().default(false),
  })
  .prefault({});

/**
 * Top-level `storage`: the backend every stateful service uses.
 * `memory` for tests, `file` (default for `serve`) for one server, `redis` for several.
 */
export const StorageSchema = z
  .strictObject({
    type: z.enum(['memory', 'file', 'redis']).default('file'),
    /** Data directory of the file backend. Relative paths resolve from the working directory. */
    dir: z.string().default('.ai-backend-data'),
    redis: RedisOptionsSchema,
  })
  .prefault({});
