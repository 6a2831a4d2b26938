import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';

// Each backend's options are built on first use (z.lazy): the union below builds the four small
// variant objects, and parsing a config builds only the chosen backend's options
// (docs/performance.md, "Tenth session").

/** Redis connection options (spec: oauth.sessionStorage.redis). */
const RedisFieldsSchema = z.lazy(() =>
  z.strictObject({
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(1).max(65535).default(6379),
    password: z.string().optional(),
    db: z.number().int().min(0).default(0),
    keyPrefix: z.string().default('ai-backend:'),
    tls: z.boolean().default(false),
  }),
);
export const RedisOptionsSchema = RedisFieldsSchema.prefault({});

/** PostgreSQL connection options (`storage.postgres`). */
export const PostgresOptionsSchema = z
  .lazy(() =>
    z.strictObject({
      /** `postgres://user:password@host:port/database?sslmode=require`; the fields below override its parts. */
      connectionString: z.string().optional(),
      host: z.string().optional(),
      port: z.number().int().min(1).max(65535).optional(),
      user: z.string().optional(),
      password: z.string().optional(),
      database: z.string().optional(),
      /** Schema of the tables, created when missing. Default 'public'. */
      schema: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a plain identifier')
        .default('public'),
      /** TLS: true verifies the server against the system CAs; an object sets ca/cert/key/rejectUnauthorized. Default false. */
      ssl: z
        .union([
          z.boolean(),
          z.strictObject({
            rejectUnauthorized: z.boolean().default(true),
            ca: z.string().optional(),
            cert: z.string().optional(),
            key: z.string().optional(),
          }),
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
    }),
  )
  .prefault({});

/** The embedded SQLite database (`storage.sqlite`). */
export const SqliteOptionsSchema = z
  .lazy(() =>
    z.strictObject({
      /** Database file. Default `<storage.dir>/ai-backend.db`. */
      file: z.string().optional(),
      /**
       * 'normal' (default): a commit survives the process being killed; the last commits before a
       * power failure may be lost. 'full': every commit is fsynced (slower).
       */
      synchronous: z.enum(['normal', 'full']).default('normal'),
      /**
       * The SQLite binding: 'auto' (default) = node:sqlite, built into Node 22.13 and later, else
       * the optional better-sqlite3 package. Force one with 'node:sqlite' or 'better-sqlite3'; both
       * read and write the same file.
       */
      driver: z.enum(['auto', 'node:sqlite', 'better-sqlite3']).default('auto'),
    }),
  )
  .prefault({});

/**
 * Retention and archiving of the append-only histories (`storage.retention`, docs/operations.md):
 * records older than a kind's age are exported to a file, then deleted; balances never change.
 * Off while no kind has an age.
 */
export const RetentionSchema = z
  .lazy(() =>
    z.strictObject({
      /** Ledger lines (balance movements) older than this many days are archived. Default: kept forever. */
      ledgerDays: z.number().int().min(1).max(36_500).optional(),
      /** Usage history (finished calls) older than this many days is archived. Default: kept forever. */
      usageDays: z.number().int().min(1).max(36_500).optional(),
      /** Credit history older than this many days is archived. Default: kept forever. */
      purchasesDays: z.number().int().min(1).max(36_500).optional(),
      /** Directory of the export files (one per kind and run). Default `<storage.dir>/archive`. */
      exportDir: z.string().optional(),
      /** Export format: 'jsonl' (default, one `{"log","seq","record"}` object a line) or 'csv' (log, seq, at, record as JSON). */
      format: z.enum(['jsonl', 'csv']).default('jsonl'),
      /**
       * Minutes between two scheduled runs (the first one this long after start). 0: only on demand (admin.runRetention, `ai-backend
       * retention`). Default 1440 (daily).
       */
      everyMinutes: z.number().int().min(0).max(525_600).default(1440),
      /** Records per batch: one export write, one checkpoint, one delete, each a short write. Default 500. */
      batchSize: z.number().int().min(1).max(10_000).default(500),
    }),
  )
  .prefault({});

/** The storage backends (`storage.type`), the default first. */
export const STORAGE_BACKENDS = ['sqlite', 'postgres', 'memory', 'redis'] as const;
const BACKENDS = STORAGE_BACKENDS;

/** What every backend shares: the data directory and where hot shared state lives. */
const commonFields = () => ({
  /** Data directory (the SQLite file, `oauth.db` and `security.log` live here). Relative paths resolve from the working directory. */
  dir: z.string().default('.ai-backend-data'),
  /**
   * Where hot, shared, short-lived state lives (rate-limit windows, anonymous budgets, MCP
   * session records and event streams): 'store' (default) = the store itself; 'redis' = the
   * Redis of `storage.redis`, for several instances on PostgreSQL.
   */
  shared: z.enum(['store', 'redis']).default('store'),
  retention: RetentionSchema,
});

/**
 * Today's input shape, accepted as it always was: `type` (default 'sqlite'; 'file' is the former
 * name of 'sqlite') beside every backend's sub-object. The sub-objects are checked by the union
 * below, after normaliseStorage.
 */
const storageInputSchema = () =>
  z.strictObject({
    type: z.enum([...BACKENDS, 'file']).default('sqlite'),
    dir: z.string().optional(),
    shared: z.enum(['store', 'redis']).optional(),
    retention: z.custom<z.input<typeof RetentionSchema>>().optional(),
    sqlite: z.custom<z.input<typeof SqliteOptionsSchema>>().optional(),
    postgres: z.custom<z.input<typeof PostgresOptionsSchema>>().optional(),
    redis: z.custom<z.input<typeof RedisOptionsSchema>>().optional(),
  });

/**
 * 'file' becomes 'sqlite', and sub-objects of backends that were not chosen are dropped (configs
 * used to carry them all; they were never read). `redis` stays when the backend is Redis or
 * shared state goes to Redis.
 */
function normaliseStorage(input: z.output<ReturnType<typeof storageInputSchema>>) {
  const type = input.type === 'file' ? 'sqlite' : input.type;
  const { sqlite, postgres, redis, ...rest } = input;
  const keepRedis = type === 'redis' || input.shared === 'redis';
  return {
    ...rest,
    type,
    ...(type === 'sqlite' ? { sqlite } : {}),
    ...(type === 'postgres' ? { postgres } : {}),
    ...(keepRedis ? { redis: redis ?? {} } : {}),
  };
}

/**
 * Top-level `storage`: where durable state lives (balances, ledgers, holds, vault, OAuth records,
 * workspaces, preferences). A union by `type`: `sqlite` (default) for one server, `postgres` for
 * several behind a load balancer, `memory` for tests, `redis` for everything in Redis. The
 * resolved config carries only the chosen backend's sub-object (plus `redis` with
 * `shared: 'redis'`).
 */
export const StorageSchema = lazySection('storage', () => {
  /** With `shared: 'redis'` a store other than Redis also carries the Redis it shares state through. */
  const sharedRedis = RedisFieldsSchema.optional();
  const common = commonFields();
  return storageInputSchema()
    .prefault({})
    .transform(normaliseStorage)
    .pipe(
      z.discriminatedUnion('type', [
        z.strictObject({ type: z.literal('sqlite'), ...common, sqlite: SqliteOptionsSchema, redis: sharedRedis }),
        z.strictObject({ type: z.literal('postgres'), ...common, postgres: PostgresOptionsSchema, redis: sharedRedis }),
        z.strictObject({ type: z.literal('memory'), ...common, redis: sharedRedis }),
        z.strictObject({ type: z.literal('redis'), ...common, redis: RedisOptionsSchema }),
      ]),
    );
});

/** The resolved `storage` section: one backend's options, chosen by `type`. */
export type StorageConfig = z.output<typeof StorageSchema>;
