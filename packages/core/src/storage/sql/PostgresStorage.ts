import type { Pool, PoolClient, PoolConfig } from 'pg';
import { CoreError } from '../../kernel/CoreError.js';
import { expiresAtFor, jsonText } from '../canonicalJson.js';
import { GroupCommit, planBatch, type BatchJob, type CommitMode } from '../GroupCommit.js';
import type {
  IncrementOptions,
  LogEntry,
  KeyPage,
  LogPage,
  ReadLogOptions,
  SetOptions,
  Storage,
  TransactOptions,
  TxPlan,
  TxRead,
} from '../../kernel/Storage.js';
import { KeyedMutex, unavailableFailure } from '../KeyedMutex.js';
import { ReadBatcher } from '../ReadBatcher.js';
import { StoreFault } from '../StoreFault.js';
import { TxValueCache, type CachedRow } from './TxValueCache.js';
import { arrayLiteral } from './arrayLiteral.js';
import { importOptional, OPTIONAL_PACKAGES } from '../../config/optionalPackages.js';
import { PURGE_BATCH, prefixEnd, refuseNewerSchema } from './migrations.js';
import {
  APPEND,
  byteOrder,
  collapseWrites,
  commitModeSql,
  DEEP_EQUAL,
  encodeWrite,
  INCREMENT,
  INCREMENT_EXISTING,
  KV_OID,
  lit,
  migrate,
  modeOf,
  num,
  readerOf,
  seen,
  sql,
  STORE_OID,
  txCall,
  txParams,
  txUpdate,
  unavailable,
  UPSERT,
  writeSql,
  writtenRows,
  type EncodedWrite,
  type EncodedWrites,
} from './postgresSql.js';

/** Connection options (the `storage.postgres` config section). */
export interface PostgresStorageOptions {
  /** `postgres://user:password@host:port/database?sslmode=...`; the fields below override its parts. */
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  password?: string;
  database?: string;
  /** Schema holding the tables (created when missing). Default 'public'. */
  schema?: string;
  /** TLS: true verifies the server against the system CAs; an object passes `ca`/`cert`/`key`/`rejectUnauthorized`. */
  ssl?: boolean | { rejectUnauthorized?: boolean; ca?: string; cert?: string; key?: string };
  /** Most connections this process opens. Default 10. */
  poolSize?: number;
  /** A connection not obtained within this many ms fails with UNAVAILABLE. Default 800. */
  connectTimeoutMs?: number;
  /** A query without an answer after this many ms fails with UNAVAILABLE. Default 800. */
  queryTimeoutMs?: number;
  /** How often a running store re-reads the schema version (watchSchema), in ms. Default 60,000. */
  schemaCheckMs?: number;
}

/** Attempts from a fresh read after the batch's guess failed, before a transaction takes the locked path. */
const OPTIMISTIC_ATTEMPTS = 3;
/** Most transactions sent in one `aib_tx` call. */
const MAX_BATCH = 64;
/** Times a batch whose check failed is read afresh and planned again before it takes the locked path. */
const BATCH_RETRIES = 1;
/**
 * How long after a batch lost its check on a key (another instance wrote it) batches on that key
 * take the locked way at once: with two instances serving one user, the optimistic attempt lost
 * nearly every time, so each batch paid a lost call, a read and a retry before locking anyway.
 */
const CONTENDED_MS = 1_000;

/** Clients given an 'error' listener (once per client, as the pool reuses them). */
const listening = new WeakSet<PoolClient>();

/** How often a running store re-reads the schema version (watchSchema). */
const SCHEMA_CHECK_MS = 60_000;

/**
 * The store for several instances: the same schema and semantics as SqliteStorage on a
 * PostgreSQL pool. A transaction is one call of the `aib_tx` function (migration 2): it takes
 * transaction-scoped advisory locks on the keys (sorted, so two transactions can never deadlock),
 * checks their row versions, writes and commits, so a crash at any instant leaves it applied
 * entirely or not at all.
 *
 * Cost per operation is what a metered AI call pays several times, so: single-key reads of the
 * same tick go out as one query (ReadBatcher), hot statements are named (parsed once per
 * connection), values are stored as plain `JSON.stringify` text (compare-and-set compares them as
 * `jsonb`, which ignores key order, so no canonical re-encoding is needed), and a transaction
 * sends row versions, not the rows it read, to prove nothing changed.
 */
export class PostgresStorage implements Storage {
  readonly kind = 'postgres' as const;
  private closed = false;
  /** Deletes rows past their expiry every few minutes (reads already skip them). */
  private readonly purger = setInterval(() => void this.purgeExpired().catch(() => undefined), 5 * 60_000).unref();
  private lastError: string | undefined;
  /** Transactions of this process on the same keys run one after another. */
  private readonly mutex = new KeyedMutex();
  /** The values optimistic transactions plan against (checked at commit). */
  private readonly cache = new TxValueCache();
  /** Keys a batch's check last failed on (another instance wrote them), with when (CONTENDED_MS). */
  private readonly contended = new Map<string, number>();
  /** Transactions waiting for the next batch (see runBatch). */
  private readonly batches = new GroupCommit(MAX_BATCH, (jobs) => this.runBatch(jobs));
  /** Single-key reads of one tick, sent as one query. */
  private readonly reads = new ReadBatcher((keys) => this.fetchTexts(keys));
  /**
   * Set when a newer release migrated the schema while this one runs, or when the schema is not
   * the one this server started with (storeLost): every call refuses from then on.
   */
  private readonly fault = new StoreFault();
  /** The `kv` table this server started on (its oid, as text): the store's identity (storeLost). */
  private storeOid = '';
  private schema = 'public';
  /** Re-reads the schema version every schemaCheckMs (one query). */
  private schemaCheck: ReturnType<typeof setInterval> | undefined;
  private lastSchemaCheck = 0;

  private constructor(private readonly pool: Pool) {
    pool.on('error', (err) => {
      this.lastError = err.message;
    });
  }

  static async connect(opts: PostgresStorageOptions): Promise<PostgresStorage> {
    const { default: pg } = await importOptional(OPTIONAL_PACKAGES.pg, "storage.type 'postgres'", () => import('pg'));
    const schema = opts.schema ?? 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))
      throw new CoreError('INVALID_PARAMS', 'storage.postgres.schema must be a plain identifier');
    const config: PoolConfig = {
      ...(opts.connectionString ? { connectionString: opts.connectionString } : {}),
      ...(opts.host ? { host: opts.host } : {}),
      ...(opts.port ? { port: opts.port } : {}),
      ...(opts.user ? { user: opts.user } : {}),
      ...(opts.password ? { password: opts.password } : {}),
      ...(opts.database ? { database: opts.database } : {}),
      ...(opts.ssl !== undefined && opts.ssl !== false ? { ssl: opts.ssl === true ? { rejectUnauthorized: true } : opts.ssl } : {}),
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 800,
      query_timeout: opts.queryTimeoutMs ?? 800,
      // Every statement here is a short lookup or write. PostgreSQL plans a parallel scan with a
      // JIT-compiled Gather when an estimate is far off (a table that grew or churned faster than
      // its statistics): at 10 M ledger rows a key-range read that finds nothing took 20-55 ms,
      // almost all of it JIT and worker start-up, against 0.1 ms as an index scan (performance.md,
      // "Growth of the durable stores").
      options: `-c search_path=${schema} -c jit=off -c max_parallel_workers_per_gather=0`,
      application_name: 'ai-backend',
    };
    const pool = new pg.Pool(config);
    const store = new PostgresStorage(pool);
    try {
      await migrate(pool, schema);
    } catch (err) {
      await pool.end().catch(() => undefined);
      if (err instanceof CoreError) throw err; // a store from a newer release: its own message
      throw new CoreError('UNAVAILABLE', `storage: cannot prepare the PostgreSQL database: ${(err as Error).message}`, { cause: err });
    }
    store.schema = schema;
    try {
      store.storeOid = (await store.kvOid())!;
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    store.watchSchema(schema, opts.schemaCheckMs ?? SCHEMA_CHECK_MS);
    return store;
  }

  onFault(listener: (err: CoreError) => void): void {
    this.fault.listen(listener);
  }

  /**
   * The schema dropped (and perhaps created again, empty, by a server starting) under a running
   * server: its prepared statements find the new tables by name and every balance, hold and
   * ledger would start again from nothing. So the `kv` table's oid is read at start, and every
   * committing transaction checks it is still the table `kv` names (in the `aib_tx` call's
   * statement, or the locked path's first round trip: no extra round trip), as do the schema
   * checks (every schemaCheckMs, at every new connection). Once it is not, every call answers 503
   * saying so, until the process is replaced (docs/operations.md, "When a dependency is down").
   */
  private storeLost(found: string | null): CoreError {
    const what = found === null ? 'its table kv is gone' : 'its table kv was dropped and created again, empty';
    const message = `storage: the PostgreSQL schema "${this.schema}" is not the one this server started with (${what}): every balance, hold and ledger would start again from nothing. Every call is refused (503). Restore the schema from a backup and restart the servers (a server started on an empty schema starts an empty store).`;
    return this.fault.raise(new CoreError('UNAVAILABLE', message));
  }

  /**
   * A newer release migrated the schema while this one runs (a rolling upgrade across a
   * migration, which operations.md says to avoid, or a second deployment on the same schema):
   * its rows may mean something this release would misread or overwrite. So the version is read
   * again every `schemaCheckMs` and whenever the pool opens a connection (after an outage, a
   * restarted PostgreSQL: at most one check a second), and once it is newer every call refuses
   * with the start-time message (503: health says storage is down and why) until the process is
   * replaced. As with the Redis format mark (RedisStorage.watchFormat), not per call: one query a
   * minute costs nothing; a newer writer overlaps with this one for at most that long.
   */
  private watchSchema(schema: string, everyMs: number): void {
    const check = () => {
      if (this.closed || this.fault.error || Date.now() - this.lastSchemaCheck < Math.min(1000, everyMs)) return;
      this.lastSchemaCheck = Date.now();
      // The pool itself, not kvOid: a failed query here is an outage (left to the calls), not a CoreError.
      this.pool
        .query<{ o: string | null }>(KV_OID)
        .then(({ rows }) => {
          if (rows[0]?.o !== this.storeOid) throw this.storeLost(rows[0]?.o ?? null);
          return this.pool.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
        })
        .then(({ rows }) => refuseNewerSchema([Number(rows[0]?.v ?? 0)], `the PostgreSQL schema "${schema}"`))
        .catch((err: unknown) => {
          // A failed query is an outage, seen by the calls themselves; only a newer schema or a lost one stops the store.
          if (err instanceof CoreError) this.fault.raise(new CoreError('UNAVAILABLE', err.message));
        });
    };
    this.pool.on('connect', check);
    this.schemaCheck = setInterval(check, everyMs).unref();
  }

  /** Throws when the store cannot serve calls: closed, or its schema was migrated by a newer release. */
  private usable(): void {
    if (this.closed) throw new CoreError('UNAVAILABLE', 'storage is closed');
    if (this.fault.error) throw this.fault.error;
  }

  /** `name`: a named statement, parsed once per connection (for statements on hot paths). */
  private async q<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    this.usable();
    try {
      return (await this.pool.query<T & object>(name ? { name, text, values } : { text, values })).rows as T[];
    } catch (err) {
      throw unavailable(err);
    }
  }

  async get<T>(key: string): Promise<T | undefined> {
    this.usable();
    const text = await this.reads.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    if (keys.length === 0) return [];
    return (await this.fetchTexts(keys)).map((t) => (t === undefined ? undefined : (JSON.parse(t) as T)));
  }

  /** Live rows' texts in the order of `keys` (undefined: absent or expired); one query. */
  private async fetchTexts(keys: readonly string[]): Promise<Array<string | undefined>> {
    const now = Date.now();
    if (keys.length === 1) {
      const rows = await this.q<{ value: string }>(
        'SELECT value FROM kv WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)',
        [keys[0], now],
        'aib_get',
      );
      return [rows[0]?.value];
    }
    const rows = await this.q<{ key: string; value: string }>(
      'SELECT key, value FROM kv WHERE key = ANY($1) AND (expires_at IS NULL OR expires_at > $2)',
      [arrayLiteral(keys), now],
      'aib_get_many',
    );
    const byKey = new Map(rows.map((r) => [r.key, r.value]));
    return keys.map((k) => byKey.get(k));
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.cache.forget(key);
    await this.q(UPSERT, [key, jsonText(value), expiresAtFor(opts?.ttlMs) ?? null]);
  }

  async delete(key: string): Promise<boolean> {
    this.cache.forget(key);
    const rows = await this.q<{ live: boolean }>(
      'DELETE FROM kv WHERE key = $1 RETURNING (expires_at IS NULL OR expires_at > $2) AS live',
      [key, Date.now()],
    );
    return rows[0]?.live === true;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    this.cache.forget(key);
    const json = jsonText(value);
    const exp = expiresAtFor(opts?.ttlMs) ?? null;
    const now = Date.now();
    // One statement each way: the row lock makes the check and the write atomic.
    const rows =
      expected === undefined
        ? await this.q(
            'INSERT INTO kv (key, value, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = NULL WHERE kv.expires_at IS NOT NULL AND kv.expires_at <= $4 RETURNING 1',
            [key, json, exp, now],
          )
        : await this.q(
            `UPDATE kv SET value = $2, expires_at = $3, due_at = NULL WHERE key = $1 AND ${DEEP_EQUAL} AND (expires_at IS NULL OR expires_at > $5) RETURNING 1`,
            [key, json, exp, jsonText(expected), now],
          );
    return rows.length === 1;
  }

  /**
   * A counter with an expiry (a window: rate limits, per-minute key limits, the circuit breaker's
   * failures, the anonymous window, routing's minute counters) is committed with
   * `synchronous_commit = off`: PostgreSQL answers before the WAL flush, which was most of the
   * statement's time, and a crash of PostgreSQL can lose the last such increments, so a window
   * counts a few calls less at worst (docs/storage.md, "Counters with an expiry"). A counter without an expiry
   * stays durable. The row decides (the expiry it holds after the write), so a decrement without
   * `ttlMs` of a windowed counter is asynchronous too.
   */
  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    this.cache.forget(key);
    const now = Date.now();
    const min = opts?.min;
    // Absent (or expired) counts as 0, which a delta below the floor can never pass: then only
    // an existing live row can be updated. Otherwise upsert; the row lock makes either atomic.
    const rows =
      min !== undefined && delta < min
        ? await this.q<{ value: string }>(INCREMENT_EXISTING, [key, delta, min, null, now], 'aib_incr_existing')
        : await this.q<{ value: string }>(INCREMENT, [key, delta, min ?? null, expiresAtFor(opts?.ttlMs, now) ?? null, now], 'aib_incr');
    return rows[0] ? Number(rows[0].value) : null;
  }

  async keys(prefix: string): Promise<string[]> {
    const rows = await this.q<{ key: string }>(
      'SELECT key FROM kv WHERE key >= $1 AND key < $2 AND (expires_at IS NULL OR expires_at > $3) ORDER BY key',
      [prefix, prefixEnd(prefix), Date.now()],
    );
    return rows.map((r) => r.key).filter((k) => k.startsWith(prefix));
  }

  async listKeys(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<KeyPage> {
    const rows = await this.q<{ key: string }>(
      'SELECT key FROM kv WHERE key >= $1 AND key < $2 AND key > $3 AND (expires_at IS NULL OR expires_at > $4) ORDER BY key LIMIT $5',
      [prefix, prefixEnd(prefix), opts.cursor ?? '', Date.now(), opts.limit],
    );
    const keys = rows.map((r) => r.key);
    return { keys: keys.filter((k) => k.startsWith(prefix)), ...(keys.length === opts.limit ? { cursor: keys.at(-1)! } : {}) };
  }

  async append<T>(log: string, record: T): Promise<number> {
    const rows = await this.q<{ seq: string }>(APPEND, [log, jsonText(record)]);
    return Number(rows[0]!.seq);
  }

  async readLog<T>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]> {
    if (opts?.limit !== undefined && opts.limit <= 0) return [];
    const limit = opts?.limit ?? null;
    const rows = opts?.newestFirst
      ? await this.q<{ seq: string; record: string }>(
          'SELECT seq, record FROM logs WHERE log = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3',
          [log, opts.before ?? Number.MAX_SAFE_INTEGER, limit],
        )
      : await this.q<{ seq: string; record: string }>('SELECT seq, record FROM logs WHERE log = $1 AND seq > $2 ORDER BY seq LIMIT $3', [
          log,
          Math.max(0, opts?.after ?? 0),
          limit,
        ]);
    return rows.map((r) => ({ seq: Number(r.seq), record: JSON.parse(r.record) as T }));
  }

  async trimLog(log: string, throughSeq: number): Promise<number> {
    // One short statement on the (log, seq) primary key: never a lock on another log's rows.
    const rows = await this.q<{ n: string }>(
      'WITH d AS (DELETE FROM logs WHERE log = $1 AND seq <= $2 RETURNING 1) SELECT count(*) AS n FROM d',
      [log, throughSeq],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async listLogs(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<LogPage> {
    const rows = await this.q<{ log: string }>(
      'SELECT log FROM log_heads WHERE log >= $1 AND log < $2 AND log > $3 ORDER BY log LIMIT $4',
      [prefix, prefixEnd(prefix), opts.cursor ?? '', opts.limit],
    );
    const logs = rows.map((r) => r.log);
    return { logs, ...(logs.length === opts.limit ? { cursor: logs.at(-1)! } : {}) };
  }

  /**
   * Optimistic: plan against what this process last saw of the keys (its cache), then one call of
   * `aib_tx` takes the keys' advisory locks, checks each row still has the version the plan saw,
   * writes and commits. So the common case, a hot key this process owns the writes of, is one
   * round trip of one prepared statement, and a lock is held only while PostgreSQL executes it;
   * transactions arriving while one is in flight go together in the next call (runBatch). A
   * changed key (another instance wrote it) fails the check: the transaction then reads first;
   * after a few lost races the locked path always makes progress. On those paths, transactions of
   * this process on the same keys queue (KeyedMutex) instead of racing each other.
   *
   * `durable: false`: committed with `synchronous_commit = off` (for that transaction only, on
   * every path), so PostgreSQL answers before the WAL flush, the largest part of a short
   * transaction's time; a crash of PostgreSQL may then lose it, whole. A batch goes out that way
   * only when all of its transactions may: one durable member makes the whole batch durable.
   */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>, opts?: TransactOptions): Promise<R> {
    this.usable();
    const mode: CommitMode = opts?.durable === false ? 'async' : 'durable';
    // Byte order, as PostgreSQL orders `COLLATE "C"` keys: every process locks in the same order.
    const sorted = byteOrder(keys);
    const batched = await this.batches.submit(sorted, plan, mode);
    if (batched.committed) return batched.result as R;
    const unlock = await this.mutex.lock(sorted);
    let failure: CoreError | undefined;
    try {
      // The guess did not hold (or decided nothing): plan on what the store holds, a consistent
      // snapshot, so a refusal or a read-only answer from it is final.
      for (let attempt = 1; attempt <= OPTIMISTIC_ATTEMPTS; attempt++) {
        const now = Date.now();
        const rows = await this.readRows(sorted, now);
        const planned = plan(readerOf(rows));
        if (planned.writes.length === 0) return planned.result;
        const writes = collapseWrites(planned.writes.map((w) => encodeWrite(w, now)));
        const params = txParams(
          sorted,
          sorted.map((k) => seen(rows.get(k)!)),
          now,
          writes,
        );
        let version: string | null;
        try {
          version = await this.txCall(mode, params);
        } catch (err) {
          for (const k of sorted) this.cache.forget(k); // outcome unknown
          throw err;
        }
        if (version !== null) {
          this.rememberWrites(writes, version, now);
          return planned.result;
        }
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
      return await this.transactLocked(sorted, plan, mode);
    } catch (err) {
      failure = unavailableFailure(err);
      throw err;
    } finally {
      unlock(failure);
    }
  }

  /**
   * Group commit: the transactions queued while the previous batch was in flight are planned one
   * after another, each against what this process last knew of its keys plus the writes of the
   * plans before it in the batch, and sent as ONE `aib_tx` call (one lock set, one check, one
   * commit). Why: one user's concurrent calls all touch that user's account row; sent one by one,
   * each waits a whole round trip for the one before, so a hot user's calls/s was bounded by the
   * round-trip time. The check covers every key a plan saw before the batch wrote it, so if the
   * call commits, each plan saw exactly the state the ones before it left: the same outcome as
   * running them in order. If the check fails, or a plan throws or writes nothing on a guess,
   * those transactions take the normal path (fresh read, own call).
   */
  private async runBatch(jobs: BatchJob[], attempt = 0): Promise<void> {
    const now = Date.now();
    if (
      attempt === 0 &&
      this.contended.size > 0 &&
      jobs.some((j) => j.keys.some((k) => now - (this.contended.get(k) ?? -Infinity) < CONTENDED_MS))
    )
      return this.runBatchLocked(jobs);
    // Keys this process knew before planning: a check lost on a key it did not know yet (its first
    // sight of a row) is not another instance's write.
    const known = new Set(jobs.flatMap((j) => j.keys).filter((k) => this.cache.has(k)));
    const { accepted, expected, encoded } = planBatch<CachedRow, EncodedWrite[]>(jobs, {
      guess: (k) => this.cache.guess(k, now),
      reader: readerOf,
      encode: (planned) => planned.map((w) => encodeWrite(w, now)),
      written: writtenRows,
    });
    if (accepted.length === 0) return;
    const keys = byteOrder(accepted.flatMap((a) => a.job.keys));
    const collapsed = collapseWrites(encoded.flat());
    const params = txParams(
      keys,
      keys.map((k) => seen(expected.get(k))),
      now,
      collapsed,
    );
    let version: string | null;
    try {
      version = await this.txCall(modeOf(accepted.map((a) => a.job)), params);
    } catch (err) {
      for (const k of keys) this.cache.forget(k); // outcome unknown
      for (const a of accepted) a.job.reject(err);
      return;
    }
    if (version === null) {
      const contend = () => {
        if (this.contended.size > 10_000) this.contended.clear();
        for (const k of keys) this.contended.set(k, now);
      };
      // Another instance wrote some of these keys. Read them all once (one query, refreshing what
      // this process knows) and plan the batch again, so a user served by several instances keeps
      // the batching; if that loses too, the batch takes the keys' locks first (it cannot lose).
      if (attempt >= BATCH_RETRIES) {
        contend();
        return this.runBatchLocked(accepted.map((a) => a.job));
      }
      let rows: Map<string, CachedRow>;
      try {
        rows = await this.readRows(keys, Date.now());
      } catch (err) {
        for (const a of accepted) a.job.reject(err);
        return;
      }
      // Only a known row that changed is contention: a row seen for the first time (a user's stored
      // preferences, guessed absent) is now known, and the next batches plan on it in one call.
      if (keys.some((k) => known.has(k) && (rows.get(k)!.version ?? null) !== (expected.get(k)?.version ?? null))) contend();
      return this.runBatch(
        accepted.map((a) => a.job),
        attempt + 1,
      );
    }
    this.rememberWrites(collapsed, version, now);
    for (const a of accepted) a.job.resolve({ committed: true, result: a.result });
  }

  /**
   * A batch that lost its races: lock all its keys and read them (round trip 1), plan every
   * transaction in order against what the ones before it wrote, then write and commit (round
   * trip 2). The read is under the locks, so a plan's refusal is final, and the batch always
   * makes progress however busy the other instances are.
   */
  private async runBatchLocked(jobs: BatchJob[]): Promise<void> {
    const keys = byteOrder(jobs.flatMap((j) => j.keys));
    const client = await this.connect();
    let broken: Error | undefined;
    let remember: (() => void) | undefined;
    const now = Date.now();
    try {
      const locks = keys.map((k) => `SELECT pg_advisory_xact_lock(hashtextextended(${lit(k)}, 0));`).join('');
      const select = keys.length
        ? `SELECT key, value, expires_at, xmin::text AS v FROM kv WHERE key IN (${keys.map(lit).join(',')}) AND (expires_at IS NULL OR expires_at > ${now});`
        : 'SELECT 1;';
      const results = await sql(client, `BEGIN;${commitModeSql(modeOf(jobs))}${STORE_OID}${locks}${select}`).catch((err: Error) => {
        broken = err;
        throw unavailable(err);
      });
      await this.checkStoreOid(client, results);
      const overlay = new Map<string, CachedRow>(keys.map((k) => [k, { value: undefined, version: undefined }]));
      const read = new Map<string, { row: CachedRow; expiresAt: number | undefined }>(
        keys.map((k) => [k, { row: { value: undefined, version: undefined }, expiresAt: undefined }]),
      );
      for (const r of results[results.length - 1]!.rows as Array<{ key?: string; value: string; expires_at: string | null; v: string }>)
        if (r.key !== undefined) {
          overlay.set(r.key, { value: r.value, version: undefined });
          read.set(r.key, { row: { value: r.value, version: r.v }, expiresAt: r.expires_at === null ? undefined : Number(r.expires_at) });
        }
      const writes: EncodedWrite[] = [];
      const outcomes: Array<{ job: BatchJob; result?: unknown; error?: unknown }> = [];
      for (const job of jobs) {
        try {
          const planned = job.plan(readerOf(new Map(job.keys.map((k) => [k, overlay.get(k)!]))));
          const encoded = planned.writes.map((w) => encodeWrite(w, now));
          for (const w of encoded) {
            if (w.op === 'set') overlay.set(w.key, { value: w.text, version: undefined });
            else if (w.op === 'delete') overlay.set(w.key, { value: undefined, version: undefined });
          }
          writes.push(...encoded);
          outcomes.push({ job, result: planned.result });
        } catch (error) {
          outcomes.push({ job, error });
        }
      }
      const c = collapseWrites(writes);
      const update = txUpdate(now);
      const text = [
        ...c.deleteKeys.map((k) => `DELETE FROM kv WHERE key = ${lit(k)};`),
        ...c.setKeys.map(
          (k, i) =>
            `INSERT INTO kv (key, value, expires_at, due_at) VALUES (${lit(k)}, ${lit(c.setValues[i]!)}, ${num(c.setExpires[i])}, ${num(c.setDue[i])}) ON CONFLICT (key) DO UPDATE SET ${update} RETURNING xmin::text AS v;`,
        ),
        ...c.logs.map(
          (log, i) =>
            `WITH h AS (INSERT INTO log_heads (log, last_seq) VALUES (${lit(log)}, 1) ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq) INSERT INTO logs (log, seq, record) SELECT ${lit(log)}, last_seq, ${lit(c.records[i]!)} FROM h;`,
        ),
      ].join('');
      let written: Array<{ rows: unknown[] }>;
      try {
        written = await sql(client, `${text}COMMIT;`);
      } catch (err) {
        broken = err as Error;
        const failure = unavailable(err);
        for (const o of outcomes) o.job.reject('error' in o ? o.error : failure);
        return;
      }
      // The upserted rows' version (this transaction's), so the next batch plans on them without
      // reading: forgotten, every transaction of the next batch on these keys (another instance
      // keeps writing them) went its own way, a read and a call each, one after another.
      const version = written.flatMap((r) => r.rows as Array<{ v?: string }>).find((r) => typeof r.v === 'string')?.v;
      remember = () => {
        // Keys only read (a call's preferences beside its account): their rows as read under the
        // locks, with their versions, so the next batch plans on them and its check proves them;
        // forgotten, every next batch guessed them absent, lost its check and came here again.
        const written = new Set([...c.setKeys, ...c.deleteKeys]);
        for (const [k, r] of read) if (!written.has(k)) this.cache.remember(k, r.row, r.expiresAt, now);
        if (version !== undefined) this.rememberWrites(c, version, now);
        else for (const k of c.deleteKeys) this.cache.remember(k, { value: undefined, version: undefined }, undefined, now);
      };
      for (const o of outcomes) {
        if ('error' in o) o.job.reject(o.error);
        else o.job.resolve({ committed: true, result: o.result });
      }
    } finally {
      // Forgotten unless the commit went through (then `remember` knows what each key holds).
      for (const k of keys) this.cache.forget(k);
      remember?.();
      client.release(broken);
    }
  }

  /** One `aib_tx` call: the commit's row version, or null when a row it checks changed; throws when the store is lost. */
  private async txCall(mode: CommitMode, params: unknown[]): Promise<string | null> {
    const call = txCall(mode);
    const rows = await this.q<{ v: string | null }>(call.text, [...params, this.storeOid], call.name);
    if (rows.length === 0) throw this.storeLost(await this.kvOid());
    return rows[0]!.v;
  }

  /** The oid of the table `kv` names now (as text; null when there is none): the store's identity (storeLost). */
  private async kvOid(): Promise<string | null> {
    return (await this.q<{ o: string | null }>(KV_OID))[0]?.o ?? null;
  }

  /** The locked paths' first round trip (after BEGIN): throws, rolling back, when `kv` is not the table this server started on. */
  private async checkStoreOid(client: PoolClient, results: Array<{ rows: unknown[] }>): Promise<void> {
    const found = results.find((r) => (r.rows[0] as { store_oid?: unknown } | undefined)?.store_oid !== undefined);
    const oid = (found?.rows[0] as { store_oid: string | null } | undefined)?.store_oid ?? null;
    if (oid === this.storeOid) return;
    await client.query('ROLLBACK').catch(() => undefined);
    throw this.storeLost(oid);
  }

  /** Read `keys` (live rows only) with their row versions, and remember what was found, absent keys included. */
  private async readRows(keys: readonly string[], now: number): Promise<Map<string, CachedRow>> {
    const found = keys.length
      ? await this.q<{ key: string; value: string; expires_at: string | null; v: string }>(
          'SELECT key, value, expires_at, xmin::text AS v FROM kv WHERE key = ANY($1) AND (expires_at IS NULL OR expires_at > $2)',
          [arrayLiteral(keys), now],
          'aib_tx_read',
        )
      : [];
    const rows = new Map<string, CachedRow>(keys.map((k) => [k, { value: undefined, version: undefined }]));
    for (const r of found) rows.set(r.key, { value: r.value, version: r.v });
    for (const k of keys) this.cache.remember(k, rows.get(k)!, undefined, now);
    for (const r of found) if (r.expires_at !== null) this.cache.remember(r.key, rows.get(r.key)!, Number(r.expires_at), now);
    return rows;
  }

  /** After a commit: what this process now knows the store holds (every upserted row has the transaction's version). */
  private rememberWrites(writes: EncodedWrites, version: string, now: number): void {
    writes.setKeys.forEach((key, i) =>
      this.cache.remember(key, { value: writes.setValues[i], version }, writes.setExpires[i] ?? undefined, now),
    );
    for (const key of writes.deleteKeys) this.cache.remember(key, { value: undefined, version: undefined }, undefined, now);
  }

  /** A pooled client; a pool that cannot connect is an outage (UNAVAILABLE), like a failed query. */
  private async connect(): Promise<PoolClient> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw unavailable(err);
    }
    // A checked-out client whose server goes away (restart, kill) emits 'error'; unheard, it would
    // crash the process. The query under way fails on its own and the client is discarded.
    if (!listening.has(client)) {
      listening.add(client);
      client.on('error', (err: Error) => (this.lastError = err.message));
    }
    return client;
  }

  /**
   * The locked path: lock and read in one round trip, write and commit in a second. Rare (after
   * lost races), so the written rows' versions are not fetched: they are forgotten instead.
   */
  private async transactLocked<R>(sorted: readonly string[], plan: (read: TxRead) => TxPlan<R>, mode: CommitMode): Promise<R> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      const now = Date.now();
      // Round trip 1: begin, lock the keys (in order), read them.
      const locks = sorted.map((k) => `SELECT pg_advisory_xact_lock(hashtextextended(${lit(k)}, 0));`).join('');
      const select = sorted.length
        ? `SELECT key, value FROM kv WHERE key IN (${sorted.map(lit).join(',')}) AND (expires_at IS NULL OR expires_at > ${now});`
        : 'SELECT 1;';
      const results = await sql(client, `BEGIN;${commitModeSql(mode)}${STORE_OID}${locks}${select}`).catch((err: Error) => {
        broken = err;
        throw unavailable(err);
      });
      await this.checkStoreOid(client, results);
      const rows = new Map<string, CachedRow>(sorted.map((k) => [k, { value: undefined, version: undefined }]));
      for (const r of results[results.length - 1]!.rows as Array<{ key?: string; value: string }>)
        if (r.key !== undefined) rows.set(r.key, { value: r.value, version: undefined });
      let planned: TxPlan<R>;
      try {
        planned = plan(readerOf(rows));
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
      // Round trip 2: every write and the commit.
      await sql(client, `${planned.writes.map((w) => writeSql(w, now)).join('')}COMMIT;`).catch((err: Error) => {
        broken = err;
        throw unavailable(err);
      });
      return planned.result;
    } finally {
      for (const k of sorted) this.cache.forget(k);
      // A connection whose transaction state is unknown is discarded, never reused.
      client.release(broken);
    }
  }

  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    // The prefix is compared with left(), which no index serves, on purpose: given a key range
    // too, the planner ANDs the primary key's range with the due index, and the range holds every
    // hold row settled since the last vacuum (a bitmap scan walks them on every sweep: 0.09 ms on
    // an empty store, 27 ms after 77,000 calls). The due index alone reads only rows due by now.
    // Named and with `now` as `(SELECT $1)`, so each connection runs one cached generic plan.
    // Planning it afresh with `now` past the statistics' histogram probes the due index's end,
    // where the settled holds' dead entries sit (2 ms a sweep at 20,000 settled calls, against
    // 0.06 ms to execute it). With `now` a plain parameter, PostgreSQL's custom plan always looked
    // cheaper than the generic one (which must guess a third of the rows), so it planned every
    // sweep afresh; an initplan's value is unknown to the planner in both, so the generic plan wins
    // after the fifth run and is never planned again (queryPlans.test.ts).
    // No `due_at IS NOT NULL`: `due_at <= …` implies it (the partial index still serves it), and
    // statistics taken when no hold was due (every due_at NULL) make that clause match no row to
    // the planner, which then chose a sequential scan and a sort: 0.9 s a sweep at 10 M rows.
    const rows = await this.q<{ key: string }>(
      'SELECT key FROM kv WHERE due_at <= (SELECT $1::bigint) AND left(key, $3) = $2 ORDER BY due_at LIMIT $4',
      [now, prefix, [...prefix].length, limit],
      'aib_due_keys',
    );
    return rows.map((r) => r.key);
  }

  /**
   * Delete rows past their expiry, PURGE_BATCH per statement: one statement over a day of expired
   * rows (after a long stop) would be one long transaction whose row locks a write to such a key
   * waits behind, and would return every deleted row. The outer condition is checked again on a
   * row a concurrent write just renewed (READ COMMITTED re-reads it; the subquery's choice is not
   * re-run), so a renewed row stays. Unnamed, with `now` a plain parameter: planned with its
   * value each time (every 5 minutes). The batch is taken in `expires_at` order: the expiry index
   * read in order and stopped after PURGE_BATCH rows, whatever the statistics say (see dueKeys for
   * the plan an unknown `now` and an `IS NOT NULL` got on statistics that saw no row with a value).
   */
  async purgeExpired(now = Date.now()): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = await this.q(
        'DELETE FROM kv WHERE key IN (SELECT key FROM kv WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2) AND expires_at <= $1 RETURNING 1',
        [now, PURGE_BATCH],
      );
      deleted += rows.length;
      if (rows.length < PURGE_BATCH) return deleted;
    }
  }

  /**
   * Autovacuum off, for the server or for one of the store's tables: `kv` gains a dead row with
   * every metered call (the hold, deleted at settlement) and its statistics go stale, which at
   * 10 M ledger rows made the sweeper walk 5 M dead index entries (operations.md, "PostgreSQL:
   * keep autovacuum on"). The store does not vacuum for the operator; it says so at start.
   */
  async maintenanceWarnings(): Promise<Array<{ message: string; fix: string }>> {
    const { rows } = await this.pool.query<{ server: string; schema: string; tables: string[] }>(
      `SELECT current_setting('autovacuum') AS server, current_schema() AS schema,
         array(SELECT c.relname::text FROM pg_class c
               WHERE c.relnamespace = current_schema()::regnamespace AND c.relname IN ('kv', 'logs', 'log_heads')
                 AND c.reloptions::text ~* 'autovacuum_enabled=(false|off|no|0)' ORDER BY c.relname) AS tables`,
    );
    const row = rows[0];
    if (!row) return [];
    const fix = `turn autovacuum on, or run VACUUM (ANALYZE) on ${row.schema}.kv, ${row.schema}.logs and ${row.schema}.log_heads regularly (vacuumdb --analyze --schema=${row.schema})`;
    const warnings: Array<{ message: string; fix: string }> = [];
    if (row.server !== 'on')
      warnings.push({
        message: `PostgreSQL runs with autovacuum off: the store's dead rows (a hold per metered call) are never reclaimed and its statistics go stale`,
        fix,
      });
    if (row.tables.length > 0)
      warnings.push({
        message: `autovacuum is off for the store's table${row.tables.length > 1 ? 's' : ''} ${row.tables.join(', ')} (autovacuum_enabled = false)`,
        fix,
      });
    return warnings;
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closed) return { ok: false, detail: 'closed' };
    if (this.fault.error) return { ok: false, detail: this.fault.error.message };
    try {
      await this.pool.query('SELECT 1');
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: (err as Error).message || this.lastError || 'unreachable' };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.purger);
    clearInterval(this.schemaCheck);
    await this.pool.end().catch(() => undefined);
  }
}
