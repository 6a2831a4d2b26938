import type { Pool, PoolClient, PoolConfig } from 'pg';
import { CoreError } from '../../errors/CoreError.js';
import { canonicalJson, expiresAtFor } from '../canonicalJson.js';
import type { IncrementOptions, LogEntry, ReadLogOptions, SetOptions, Storage, TxPlan, TxRead, TxWrite } from '../Storage.js';
import { KeyedMutex } from '../KeyedMutex.js';
import { TxValueCache } from './TxValueCache.js';
import { MIGRATIONS, MIGRATIONS_TABLE, prefixEnd } from './migrations.js';

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
}

/** Optimistic attempts of a transaction before it takes the locked path. */
const OPTIMISTIC_ATTEMPTS = 3;

/** Any constant: the key of the session-level advisory lock migrations run under. */
const MIGRATION_LOCK = 7_246_915_301;

/** SQL string literal (standard_conforming_strings is on by default since PostgreSQL 9.1). */
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const num = (n: number | undefined | null) => (n === undefined || n === null ? 'NULL' : String(Math.trunc(n)));

/**
 * The store for several instances: the same schema and semantics as SqliteStorage on a
 * PostgreSQL pool. A transaction takes transaction-scoped advisory locks on the keys it reads
 * (sorted, so two transactions can never deadlock), reads them, and writes and commits in a
 * second round trip; a crash at any instant leaves it applied entirely or not at all.
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

  private constructor(private readonly pool: Pool) {
    pool.on('error', (err) => {
      this.lastError = err.message;
    });
  }

  static async connect(opts: PostgresStorageOptions): Promise<PostgresStorage> {
    const { default: pg } = await import('pg');
    const schema = opts.schema ?? 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new CoreError('INVALID_PARAMS', 'storage.postgres.schema must be a plain identifier');
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
      options: `-c search_path=${schema}`,
      application_name: 'ai-backend',
    };
    const pool = new pg.Pool(config);
    const store = new PostgresStorage(pool);
    try {
      await migrate(pool, schema);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new CoreError('UNAVAILABLE', `storage: cannot prepare the PostgreSQL database: ${(err as Error).message}`, { cause: err });
    }
    return store;
  }

  private async q<T>(text: string, values?: unknown[]): Promise<T[]> {
    if (this.closed) throw new CoreError('UNAVAILABLE', 'storage is closed');
    try {
      return (await this.pool.query(text, values)).rows as T[];
    } catch (err) {
      throw unavailable(err);
    }
  }

  async get<T>(key: string): Promise<T | undefined> {
    const rows = await this.q<{ value: string }>('SELECT value FROM kv WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)', [key, Date.now()]);
    return rows[0] ? (JSON.parse(rows[0].value) as T) : undefined;
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    if (keys.length === 0) return [];
    const rows = await this.q<{ key: string; value: string }>('SELECT key, value FROM kv WHERE key = ANY($1) AND (expires_at IS NULL OR expires_at > $2)', [keys, Date.now()]);
    const byKey = new Map(rows.map((r) => [r.key, r.value]));
    return keys.map((k) => (byKey.has(k) ? (JSON.parse(byKey.get(k)!) as T) : undefined));
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.cache.forget(key);
    await this.q(UPSERT, [key, canonicalJson(value), expiresAtFor(opts?.ttlMs) ?? null]);
  }

  async delete(key: string): Promise<boolean> {
    this.cache.forget(key);
    const rows = await this.q<{ live: boolean }>('DELETE FROM kv WHERE key = $1 RETURNING (expires_at IS NULL OR expires_at > $2) AS live', [key, Date.now()]);
    return rows[0]?.live === true;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    this.cache.forget(key);
    const json = canonicalJson(value);
    const exp = expiresAtFor(opts?.ttlMs) ?? null;
    const now = Date.now();
    // One statement each way: the row lock makes the check and the write atomic.
    const rows =
      expected === undefined
        ? await this.q(
            'INSERT INTO kv (key, value, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = NULL WHERE kv.expires_at IS NOT NULL AND kv.expires_at <= $4 RETURNING 1',
            [key, json, exp, now],
          )
        : await this.q('UPDATE kv SET value = $2, expires_at = $3, due_at = NULL WHERE key = $1 AND value = $4 AND (expires_at IS NULL OR expires_at > $5) RETURNING 1', [
            key,
            json,
            exp,
            canonicalJson(expected),
            now,
          ]);
    return rows.length === 1;
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    this.cache.forget(key);
    const now = Date.now();
    const min = opts?.min;
    // Absent (or expired) counts as 0, which a delta below the floor can never pass: then only
    // an existing live row can be updated. Otherwise upsert; the row lock makes either atomic.
    // The current value: absent, expired or not an integer counts as 0.
    const cur = `(CASE WHEN (kv.expires_at IS NOT NULL AND kv.expires_at <= $5) OR kv.value !~ '^-?[0-9]{1,18}$' THEN 0 ELSE kv.value::bigint END)`;
    const rows =
      min !== undefined && delta < min
        ? await this.q<{ value: string }>(
            `UPDATE kv SET value = (${cur} + $2::bigint)::text WHERE key = $1 AND ${cur} + $2::bigint >= $3::bigint AND $4::bigint IS NULL RETURNING value`,
            [key, delta, min, null, now],
          )
        : await this.q<{ value: string }>(
            `INSERT INTO kv (key, value, expires_at) VALUES ($1, $2::bigint::text, $4)
             ON CONFLICT (key) DO UPDATE SET
               value = (${cur} + $2::bigint)::text,
               expires_at = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $5 THEN $4 ELSE kv.expires_at END
             WHERE $3::bigint IS NULL OR ${cur} + $2::bigint >= $3::bigint
             RETURNING value`,
            [key, delta, min ?? null, expiresAtFor(opts?.ttlMs, now) ?? null, now],
          );
    return rows[0] ? Number(rows[0].value) : null;
  }

  async keys(prefix: string): Promise<string[]> {
    const rows = await this.q<{ key: string }>('SELECT key FROM kv WHERE key >= $1 AND key < $2 AND (expires_at IS NULL OR expires_at > $3) ORDER BY key', [prefix, prefixEnd(prefix), Date.now()]);
    return rows.map((r) => r.key).filter((k) => k.startsWith(prefix));
  }

  async append<T>(log: string, record: T): Promise<number> {
    const rows = await this.q<{ seq: string }>(APPEND, [log, canonicalJson(record)]);
    return Number(rows[0]!.seq);
  }

  async readLog<T>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]> {
    if (opts?.limit !== undefined && opts.limit <= 0) return [];
    const limit = opts?.limit ?? null;
    const rows = opts?.newestFirst
      ? await this.q<{ seq: string; record: string }>('SELECT seq, record FROM logs WHERE log = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [log, opts.before ?? Number.MAX_SAFE_INTEGER, limit])
      : await this.q<{ seq: string; record: string }>('SELECT seq, record FROM logs WHERE log = $1 AND seq > $2 ORDER BY seq LIMIT $3', [log, Math.max(0, opts?.after ?? 0), limit]);
    return rows.map((r) => ({ seq: Number(r.seq), record: JSON.parse(r.record) as T }));
  }

  /**
   * Optimistic: plan against what this process last saw of the keys (its cache), then one round
   * trip that takes the keys' advisory locks, checks the store still holds exactly those values,
   * writes and commits. So the common case, a hot key this process owns the writes of, is one
   * round trip, and a lock is held only while PostgreSQL executes that batch. A changed key (another
   * instance wrote it) fails the check: the next attempts read first; after a few lost races the
   * locked path always makes progress. Transactions of this process on the same keys queue
   * (KeyedMutex) instead of racing each other.
   */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    if (this.closed) throw new CoreError('UNAVAILABLE', 'storage is closed');
    // Byte order, as PostgreSQL orders `COLLATE "C"` keys in the check below.
    const sorted = [...new Set(keys)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const unlock = await this.mutex.lock(sorted);
    try {
      for (let attempt = 0; attempt <= OPTIMISTIC_ATTEMPTS; attempt++) {
        const now = Date.now();
        const guessed = attempt === 0;
        const values = guessed ? new Map(sorted.map((k) => [k, this.cache.guess(k, now)])) : await this.readRows(sorted, now);
        let planned: TxPlan<R>;
        try {
          planned = plan(readerOf(values));
        } catch (err) {
          if (guessed) continue; // decided on a guess: decide again on what the store holds
          throw err;
        }
        // A guess is never returned unchecked; a fresh read is one consistent snapshot.
        if (planned.writes.length === 0) {
          if (guessed) continue;
          return planned.result;
        }
        const expected = sorted.filter((k) => values.get(k) !== undefined).map((k) => `${k}\u0001${values.get(k)}`).join('\u0002');
        const locks = sorted.map((k) => `SELECT pg_advisory_xact_lock(hashtextextended(${lit(k)}, 0));`).join('');
        // Division by zero (22012) aborts the batch when a key changed since it was read.
        const check = sorted.length
          ? `SELECT 1 / (CASE WHEN (SELECT coalesce(string_agg(key || chr(1) || value, chr(2) ORDER BY key), '') FROM kv WHERE key IN (${sorted.map(lit).join(',')}) AND (expires_at IS NULL OR expires_at > ${now})) = ${lit(expected)} THEN 1 ELSE 0 END);`
          : '';
        let committed = false;
        try {
          committed = await this.batch(`BEGIN;${locks}${check}${planned.writes.map((w) => writeSql(w, now)).join('')}COMMIT;`);
        } catch (err) {
          for (const k of sorted) this.cache.forget(k); // outcome unknown
          throw err;
        }
        if (committed) {
          this.rememberWrites(planned.writes, now);
          return planned.result;
        }
        if (!guessed) await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
      return await this.transactLocked(sorted, plan);
    } finally {
      unlock();
    }
  }

  /** Read `keys` (live rows only) and remember what was found, absent keys included. */
  private async readRows(keys: readonly string[], now: number): Promise<Map<string, string | undefined>> {
    const rows = keys.length
      ? await this.q<{ key: string; value: string; expires_at: string | null }>('SELECT key, value, expires_at FROM kv WHERE key = ANY($1) AND (expires_at IS NULL OR expires_at > $2)', [keys, now])
      : [];
    const values = new Map<string, string | undefined>(keys.map((k) => [k, undefined]));
    for (const r of rows) values.set(r.key, r.value);
    for (const k of keys) this.cache.remember(k, values.get(k));
    for (const r of rows) if (r.expires_at !== null) this.cache.remember(r.key, r.value, Number(r.expires_at));
    return values;
  }

  /** After a commit: what this process now knows the store holds. */
  private rememberWrites(writes: readonly TxWrite[], now: number): void {
    for (const w of writes) {
      if (w.op === 'set') this.cache.remember(w.key, canonicalJson(w.value), expiresAtFor(w.ttlMs, now));
      else if (w.op === 'delete') this.cache.remember(w.key, undefined);
    }
  }

  /** A pooled client; a pool that cannot connect is an outage (UNAVAILABLE), like a failed query. */
  private async connect(): Promise<PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw unavailable(err);
    }
  }

  /** Run a BEGIN…COMMIT batch; false when its check found a changed key (rolled back). */
  private async batch(text: string): Promise<boolean> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      await sql(client, text);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === '22012') {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        return false;
      }
      broken = err as Error;
      throw unavailable(err);
    } finally {
      client.release(broken);
    }
  }

  /** The locked path: lock and read in one round trip, write and commit in a second. */
  private async transactLocked<R>(sorted: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      const now = Date.now();
      // Round trip 1: begin, lock the keys (in order), read them.
      const locks = sorted.map((k) => `SELECT pg_advisory_xact_lock(hashtextextended(${lit(k)}, 0));`).join('');
      const select = sorted.length ? `SELECT key, value FROM kv WHERE key IN (${sorted.map(lit).join(',')}) AND (expires_at IS NULL OR expires_at > ${now});` : 'SELECT 1;';
      const results = await sql(client, `BEGIN;${locks}${select}`).catch((err: Error) => {
        broken = err;
        throw unavailable(err);
      });
      const values = new Map<string, string | undefined>(sorted.map((k) => [k, undefined]));
      for (const r of results[results.length - 1]!.rows as Array<{ key?: string; value: string }>) if (r.key !== undefined) values.set(r.key, r.value);
      let planned: TxPlan<R>;
      try {
        planned = plan(readerOf(values));
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
      // Round trip 2: every write and the commit.
      await sql(client, `${planned.writes.map((w) => writeSql(w, now)).join('')}COMMIT;`).catch((err: Error) => {
        broken = err;
        for (const k of sorted) this.cache.forget(k); // outcome unknown
        throw unavailable(err);
      });
      this.rememberWrites(planned.writes, now);
      return planned.result;
    } finally {
      // A connection whose transaction state is unknown is discarded, never reused.
      client.release(broken);
    }
  }

  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    const rows = await this.q<{ key: string }>('SELECT key FROM kv WHERE due_at IS NOT NULL AND due_at <= $1 AND key >= $2 AND key < $3 ORDER BY due_at LIMIT $4', [now, prefix, prefixEnd(prefix), limit]);
    return rows.map((r) => r.key);
  }

  /** Delete rows past their expiry. */
  async purgeExpired(now = Date.now()): Promise<number> {
    const rows = await this.q('DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= $1 RETURNING 1', [now]);
    return rows.length;
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closed) return { ok: false, detail: 'closed' };
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
    await this.pool.end().catch(() => undefined);
  }
}

const UPSERT = 'INSERT INTO kv (key, value, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = NULL';
const APPEND = `WITH h AS (INSERT INTO log_heads (log, last_seq) VALUES ($1, 1) ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq)
  INSERT INTO logs (log, seq, record) SELECT $1, last_seq, $2 FROM h RETURNING seq`;

function writeSql(w: TxWrite, now: number): string {
  if (w.op === 'set') {
    return `INSERT INTO kv (key, value, expires_at, due_at) VALUES (${lit(w.key)}, ${lit(canonicalJson(w.value))}, ${num(expiresAtFor(w.ttlMs, now))}, ${num(w.dueAt)}) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = excluded.due_at;`;
  }
  if (w.op === 'delete') return `DELETE FROM kv WHERE key = ${lit(w.key)};`;
  const log = lit(w.log);
  return `WITH h AS (INSERT INTO log_heads (log, last_seq) VALUES (${log}, 1) ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq) INSERT INTO logs (log, seq, record) SELECT ${log}, last_seq, ${lit(canonicalJson(w.record))} FROM h;`;
}

/** The read function a plan gets over the raw values of its declared keys. */
function readerOf(values: Map<string, string | undefined>): TxRead {
  return <T>(key: string) => {
    if (!values.has(key)) throw new Error(`transaction read of undeclared key ${key}`);
    const v = values.get(key);
    return v === undefined ? undefined : (JSON.parse(v) as T);
  };
}

/** A multi-statement text in the simple protocol (one round trip); always an array of results. */
async function sql(client: PoolClient, text: string): Promise<Array<{ rows: unknown[] }>> {
  const r = (await client.query(text)) as unknown as { rows: unknown[] } | Array<{ rows: unknown[] }>;
  return Array.isArray(r) ? r : [r];
}

function unavailable(err: unknown): CoreError {
  if (err instanceof CoreError) return err;
  return new CoreError('UNAVAILABLE', 'storage unavailable', { cause: err });
}

/** Create the schema and apply pending migrations, one instance at a time (session advisory lock). */
async function migrate(pool: Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(MIGRATIONS_TABLE);
      const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
      for (const m of MIGRATIONS) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.postgres);
          await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}
