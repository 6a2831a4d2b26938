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

/** PostgreSQL connection options (`storage.postgres`). */
export const PostgresOptionsSchema = z
  .strictObject({
    /** `postgres://user:password@host:port/database?sslmode=require`; the fields below override its parts. */
    connectionString: z.string().optional(),
    host: z.string().optional(),
    port: z.number().int().min(1).max(65535).optional(),
    user: z.string().optional(),
    password: z.string().optional(),
    database: z.string().optional(),
    /** Schema of the tables, created when missing. Default 'public'. */
    schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a plain identifier').default('public'),
    /** TLS: true verifies the server against the system CAs; an object sets ca/cert/key/rejectUnauthorized. Default false. */
    ssl: z
      .union([
        z.boolean(),
        z.strictObject({ rejectUnauthorized: z.boolean().default(true), ca: z.string().optional(), cert: z.string().optional(), key: z.string().optional() }),
      ])
      .default(false),
    /** Connections per server instance. Default 10. */
    poolSize: z.number().int().min(1).max(1000).default(10),
    /**
     * Fail with 503 when no connection is obtained within this many ms (database unreachable, or
     * every pooled connection busy). Default 800: an outage answers within a second.
     */
    connectTimeoutMs: z.number().int().min(50).max(60_000).default(800),
    /** Fail with 503 when a query gets no answer within this many ms. Default 800. */
    queryTimeoutMs: z.number().int().min(50).max(600_000).default(800),
  })
  .prefault({});

/** The embedded SQLite database (`storage.sqlite`). */
export const SqliteOptionsSchema = z
  .strictObject({
    /** Database file. Default `<storage.dir>/ai-backend.db`. */
    file: z.string().optional(),
    /**
     * 'normal' (default): a commit survives the process being killed; the last commits before a
     * power failure may be lost. 'full': every commit is fsynced (slower).
     */
    synchronous: z.enum(['normal', 'full']).default('normal'),
  })
  .prefault({});

/**
 * Top-level `storage`: where durable state lives (balances, ledgers, holds, vault, OAuth records,
 * workspaces, preferences). `sqlite` (default) for one server, `postgres` for several behind a
 * load balancer, `memory` for tests, `redis` for everything in Redis. `file` is the former name
 * of the embedded store and means `sqlite`.
 */
export const StorageSchema = z
  .strictObject({
    type: z
      .enum(['sqlite', 'postgres', 'memory', 'redis', 'file'])
      .default('sqlite')
      .transform((t) => (t === 'file' ? 'sqlite' : t)),
    /** Data directory (the SQLite file lives here). Relative paths resolve from the working directory. */
    dir: z.string().default('.ai-backend-data'),
    sqlite: SqliteOptionsSchema,
    postgres: PostgresOptionsSchema,
    redis: RedisOptionsSchema,
    /**
     * Where hot, shared, short-lived state lives (rate-limit windows, anonymous budgets, MCP
     * session records and event streams): 'store' (default) = the store above; 'redis' = the
     * Redis of `storage.redis`, for several instances on PostgreSQL.
     */
    shared: z.enum(['store', 'redis']).default('store'),
  })
  .prefault({});
