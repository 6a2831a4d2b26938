import type { Pool, PoolClient } from 'pg';
import { CoreError } from '../../kernel/CoreError.js';
import { EXPIRY_SLACK_FROM_TTL_MS, expiresAtFor, jsonText } from '../canonicalJson.js';
import type { BatchJob, CommitMode } from '../GroupCommit.js';
import type { TxRead, TxWrite } from '../../kernel/Storage.js';
import { sha256 } from '../../lib/sha256.js';
import type { CachedRow } from './TxValueCache.js';
import { arrayLiteral } from './arrayLiteral.js';
import { MIGRATIONS, MIGRATIONS_TABLE, refuseNewerSchema } from './migrations.js';

// The SQL PostgresStorage sends and the encoding of a transaction's writes into it: its statements
// (named, parsed once per connection), the `aib_tx` call, the simple-protocol batch's text, and the
// migration run at connect.

/** Any constant: the key of the session-level advisory lock migrations run under. */
const MIGRATION_LOCK = 7_246_915_301;

/** SQL string literal (standard_conforming_strings is on by default since PostgreSQL 9.1). */
export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
export const num = (n: number | undefined | null) => (n === undefined || n === null ? 'NULL' : String(Math.trunc(n)));

export const UPSERT =
  'INSERT INTO kv (key, value, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = NULL';
/** A counter's current value in `increment`'s statements: absent, expired or not an integer counts as 0. */
const COUNTER = `(CASE WHEN (kv.expires_at IS NOT NULL AND kv.expires_at <= $5) OR kv.value !~ '^-?[0-9]{1,18}$' THEN 0 ELSE kv.value::bigint END)`;
/**
 * What `increment`'s statements return: the new value, and (evaluated for the written row, before
 * the statement's own commit) `synchronous_commit = off` for that commit when the row has an
 * expiry; otherwise the setting is left as it was (set to its current value).
 */
const COUNTER_RETURNING = `RETURNING value, set_config('synchronous_commit', CASE WHEN expires_at IS NULL THEN current_setting('synchronous_commit') ELSE 'off' END, true) AS commit_mode`;
/** A decrement below the floor: only an existing live row that stays at or above it is updated. */
export const INCREMENT_EXISTING = `UPDATE kv SET value = (${COUNTER} + $2::bigint)::text WHERE key = $1 AND ${COUNTER} + $2::bigint >= $3::bigint AND $4::bigint IS NULL ${COUNTER_RETURNING}`;
/** Upsert: created with the expiry $4; an expired row starts again from 0 with it; $3 is the floor (or NULL). */
export const INCREMENT = `INSERT INTO kv (key, value, expires_at) VALUES ($1, $2::bigint::text, $4)
  ON CONFLICT (key) DO UPDATE SET
    value = (${COUNTER} + $2::bigint)::text,
    expires_at = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $5 THEN $4 ELSE kv.expires_at END
  WHERE $3::bigint IS NULL OR ${COUNTER} + $2::bigint >= $3::bigint
  ${COUNTER_RETURNING}`;
export const APPEND = `WITH h AS (INSERT INTO log_heads (log, last_seq) VALUES ($1, 1) ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq)
  INSERT INTO logs (log, seq, record) SELECT $1, last_seq, $2 FROM h RETURNING seq`;
/**
 * The stored `value` deep-equals the JSON text $4. Equal texts are the usual case (an expected
 * value read back and re-encoded gives the same text); otherwise jsonb equality ignores key order.
 * jsonb cannot hold the escape \u0000, so a text containing it never reaches the cast: such values
 * match only as identical text.
 */
export const DEEP_EQUAL =
  "CASE WHEN value = $4 THEN true WHEN strpos(value, '\\u0000') > 0 OR strpos($4, '\\u0000') > 0 THEN false ELSE value::jsonb = $4::jsonb END";
const TX_COLUMNS =
  'aib_tx($1::text[], $2::text[], $3, $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::text[]) AS v';
/**
 * `aib_tx` runs only while `kv` is still the table this server started on ($11: its oid,
 * PostgresStorage.storeLost); otherwise the statement returns no row and writes nothing.
 */
const TX_GUARD = "WHERE to_regclass('kv')::oid = $11::oid";
const TX_CALL = `SELECT ${TX_COLUMNS} ${TX_GUARD}`;
/**
 * The same call committed with `synchronous_commit = off` (TransactOptions.durable false). The
 * statement is its own transaction and `set_config(…, true)` lasts until its end; PostgreSQL
 * reads the setting at commit, so where it stands in the statement does not matter.
 */
const TX_CALL_ASYNC = `SELECT ${TX_COLUMNS}, set_config('synchronous_commit', 'off', true) AS async ${TX_GUARD}`;
/** The oid `kv` names now, as text (storeLost). */
export const KV_OID = "SELECT to_regclass('kv')::oid::text AS o";
/** The locked paths' first statement after BEGIN: the same, under a column name their results are searched for. */
export const STORE_OID = "SELECT to_regclass('kv')::oid::text AS store_oid;";

// CommitMode (GroupCommit.ts) here: 'durable' waits for the WAL flush (the connection's setting),
// 'async' commits with `synchronous_commit = off`.

/** A batch commits asynchronously only when every transaction in it may: one durable member makes it durable. */
export function modeOf(jobs: ReadonlyArray<Pick<BatchJob, 'commit'>>): CommitMode {
  return jobs.some((j) => j.commit === 'durable') ? 'durable' : 'async';
}

/** The `aib_tx` statement and its name for each commit mode (see TX_CALL_ASYNC). */
export function txCall(mode: CommitMode): { text: string; name: string } {
  return mode === 'durable' ? { text: TX_CALL, name: 'aib_tx' } : { text: TX_CALL_ASYNC, name: 'aib_tx_async' };
}

/**
 * The parameters of an `aib_tx` call but the last (the store's oid): the keys, what each was seen
 * as (`seen`), now, and the collapsed writes. The arrays go as array literals made here
 * (arrayLiteral: one native call each, where pg's own encoder escaped element by element).
 */
export function txParams(keys: readonly string[], seenAs: ReadonlyArray<string | null>, now: number, w: EncodedWrites): unknown[] {
  return [
    arrayLiteral(keys),
    arrayLiteral(seenAs),
    now,
    arrayLiteral(w.setKeys),
    arrayLiteral(w.setValues),
    arrayLiteral(w.setExpires),
    arrayLiteral(w.setDue),
    arrayLiteral(w.deleteKeys),
    arrayLiteral(w.logs),
    arrayLiteral(w.records),
  ];
}

/** What the locked paths send after BEGIN: nothing for a durable transaction, else `synchronous_commit = off` until its COMMIT. */
export function commitModeSql(mode: CommitMode): string {
  return mode === 'durable' ? '' : 'SET LOCAL synchronous_commit = off;';
}

/** Distinct keys in byte order (UTF-8), each encoded once rather than once per comparison. */
export function byteOrder(keys: readonly string[]): string[] {
  const unique = [...new Set(keys)];
  // Plain ASCII keys (the usual case) sort the same by UTF-16 code units as by bytes.
  if (unique.every((k) => /^[\x00-\x7f]*$/.test(k))) return unique.sort();
  return unique
    .map((k) => ({ k, b: Buffer.from(k) }))
    .sort((x, y) => Buffer.compare(x.b, y.b))
    .map((e) => e.k);
}

/** A transaction's writes as the columns `aib_tx` takes. */
export interface EncodedWrites {
  setKeys: string[];
  setValues: string[];
  setExpires: Array<number | null>;
  setDue: Array<number | null>;
  deleteKeys: string[];
  logs: string[];
  records: string[];
}

/** One write, its value encoded once (the batch's later plans read that same text). */
export type EncodedWrite =
  | { op: 'set'; key: string; text: string; expiresAt: number | null; dueAt: number | null }
  | { op: 'delete'; key: string }
  | { op: 'append'; log: string; text: string };

export function encodeWrite(w: TxWrite, now: number): EncodedWrite {
  if (w.op === 'set')
    return {
      op: 'set',
      key: w.key,
      text: jsonText(w.value),
      expiresAt: expiresAtFor(w.ttlMs, now) ?? null,
      dueAt: w.dueAt === undefined ? null : Math.trunc(w.dueAt),
    };
  if (w.op === 'delete') return w;
  return { op: 'append', log: w.log, text: jsonText(w.record) };
}

/**
 * The columns `aib_tx` takes. The last write to each key wins (a set then a delete of one key is a
 * delete), so the upserts and deletes of one call never touch a row twice; appends keep their order.
 */
export function collapseWrites(writes: readonly EncodedWrite[]): EncodedWrites {
  const last = new Map<string, Extract<EncodedWrite, { op: 'set' | 'delete' }>>();
  const out: EncodedWrites = { setKeys: [], setValues: [], setExpires: [], setDue: [], deleteKeys: [], logs: [], records: [] };
  for (const w of writes) {
    if (w.op === 'append') {
      out.logs.push(w.log);
      out.records.push(w.text);
    } else {
      last.delete(w.key);
      last.set(w.key, w);
    }
  }
  for (const w of last.values()) {
    if (w.op === 'delete') {
      out.deleteKeys.push(w.key);
      continue;
    }
    out.setKeys.push(w.key);
    out.setValues.push(w.text);
    out.setExpires.push(w.expiresAt);
    out.setDue.push(w.dueAt);
  }
  return out;
}

/**
 * The `DO UPDATE SET` of a transaction's upsert, as `aib_tx` has it since migration 5: the row's
 * live expiry is kept when the new one is within 1/256 of a TTL of an hour or more (keepsExpiry),
 * so rewriting a day row changes no indexed column and PostgreSQL can make the update a HOT one.
 */
export function txUpdate(now: number): string {
  const ttl = `(excluded.expires_at - ${now})`;
  return `value = excluded.value, due_at = excluded.due_at, expires_at = CASE WHEN kv.expires_at > ${now} AND ${ttl} >= ${EXPIRY_SLACK_FROM_TTL_MS} AND abs(excluded.expires_at - kv.expires_at) * 256 <= ${ttl} THEN kv.expires_at ELSE excluded.expires_at END`;
}

/** One write as SQL text (the locked path's second round trip). */
export function writeSql(w: TxWrite, now: number): string {
  if (w.op === 'set') {
    return `INSERT INTO kv (key, value, expires_at, due_at) VALUES (${lit(w.key)}, ${lit(jsonText(w.value))}, ${num(expiresAtFor(w.ttlMs, now))}, ${num(w.dueAt)}) ON CONFLICT (key) DO UPDATE SET ${txUpdate(now)};`;
  }
  if (w.op === 'delete') return `DELETE FROM kv WHERE key = ${lit(w.key)};`;
  const log = lit(w.log);
  return `WITH h AS (INSERT INTO log_heads (log, last_seq) VALUES (${log}, 1) ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq) INSERT INTO logs (log, seq, record) SELECT ${log}, last_seq, ${lit(jsonText(w.record))} FROM h;`;
}

/**
 * What `aib_tx` checks a planned-on row against (migration 6): NULL for a row planned as absent,
 * else its version and the SHA-256 of its text. The version alone is not enough: a crash of
 * PostgreSQL loses the commits no WAL flush covered, and recovery hands their transaction ids out
 * again, so a row written after it can carry the xmin this process remembers for a row the crash
 * took away. With the text's hash, the check passes only when the row holds what the plan read.
 */
export function seen(row: CachedRow | undefined): string | null {
  if (row?.version === undefined || row.value === undefined) return null;
  return `${row.version}:${sha256(row.value, 'hex')}`;
}

/** The rows a plan's encoded writes leave, as the next plan of a batch reads them (not yet versioned). */
export function* writtenRows(writes: readonly EncodedWrite[]): Iterable<readonly [string, CachedRow]> {
  for (const w of writes) {
    if (w.op === 'set') yield [w.key, { value: w.text, version: undefined }];
    else if (w.op === 'delete') yield [w.key, { value: undefined, version: undefined }];
  }
}

/** The read function a plan gets over the raw values of its declared keys. */
export function readerOf(rows: Map<string, CachedRow>): TxRead {
  return <T>(key: string) => {
    const row = rows.get(key);
    if (!row) throw new Error(`transaction read of undeclared key ${key}`);
    return row.value === undefined ? undefined : (JSON.parse(row.value) as T);
  };
}

/** A multi-statement text in the simple protocol (one round trip); always an array of results. */
export async function sql(client: PoolClient, text: string): Promise<Array<{ rows: unknown[] }>> {
  const r = (await client.query(text)) as unknown as { rows: unknown[] } | Array<{ rows: unknown[] }>;
  return Array.isArray(r) ? r : [r];
}

export function unavailable(err: unknown): CoreError {
  if (err instanceof CoreError) return err;
  return new CoreError('UNAVAILABLE', 'storage unavailable', { cause: err });
}

/** Create the schema and apply pending migrations, one instance at a time (session advisory lock). */
export async function migrate(pool: Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(MIGRATIONS_TABLE);
      const applied = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
      );
      refuseNewerSchema(applied, `the PostgreSQL schema "${schema}"`);
      for (const m of MIGRATIONS) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.postgres);
          await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
            m.version,
            m.name,
            new Date().toISOString(),
          ]);
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
