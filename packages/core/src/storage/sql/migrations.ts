/**
 * The schema of the SQL stores, as numbered migrations applied in order at start (PostgreSQL under
 * an advisory lock, so several instances starting together apply each one once). One schema for
 * both engines; where the dialects differ a migration gives both texts. Never edit a released
 * migration: add the next one.
 *
 * - `kv`: the key-value rows of the Storage interface (balances and lifetime totals, holds,
 *   idempotency claims, vault entries, OAuth records, workspaces, preferences...). `expires_at`
 *   (ms) drops a row; `due_at` (ms) lists it for `dueKeys` (holds past their expiry), both indexed.
 * - `log_heads` + `logs`: append-only logs (ledgers, usage and purchase histories), paged by
 *   (log, seq) on the primary key; `log_heads` lists the logs and keeps their sequence numbers
 *   going past a trim (PostgreSQL: hands out every number under a row lock; SQLite: migration 4).
 */
import { CoreError } from '../../kernel/CoreError.js';

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'kv and logs',
    sqlite: `
      CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER, due_at INTEGER) WITHOUT ROWID;
      CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;
      CREATE INDEX kv_due_at ON kv (due_at) WHERE due_at IS NOT NULL;
      CREATE TABLE log_heads (log TEXT PRIMARY KEY, last_seq INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE logs (log TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (log, seq)) WITHOUT ROWID;
    `,
    postgres: `
      CREATE TABLE kv (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL, expires_at BIGINT, due_at BIGINT);
      CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;
      CREATE INDEX kv_due_at ON kv (due_at) WHERE due_at IS NOT NULL;
      CREATE TABLE log_heads (log TEXT COLLATE "C" PRIMARY KEY, last_seq BIGINT NOT NULL);
      CREATE TABLE logs (log TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (log, seq));
    `,
  },
  {
    version: 2,
    name: 'transaction function',
    // SQLite runs a transaction in process; nothing to add there.
    sqlite: '',
    // One call applies a whole transaction (see PostgresStorage.transact): lock the declared keys
    // (advisory, in the order given), check that each still has the row version (xmin) the caller
    // planned against (NULL: absent or expired), then delete, upsert and append. NULL when a key
    // changed: nothing is written. Otherwise the row version of the upserted rows ('' if none).
    // One statement, so it commits on its own: no BEGIN/COMMIT round trips, and the plan is
    // prepared once per connection.
    postgres: `
      CREATE FUNCTION aib_tx(p_keys text[], p_seen text[], p_now bigint,
          p_set_keys text[], p_set_values text[], p_set_expires bigint[], p_set_due bigint[],
          p_delete_keys text[], p_logs text[], p_records text[]) RETURNS text
      LANGUAGE plpgsql AS $fn$
      DECLARE
        v_key text;
        v_stale int;
        v_seq bigint;
        v_version text := '';
      BEGIN
        FOREACH v_key IN ARRAY p_keys LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended(v_key, 0));
        END LOOP;
        SELECT count(*) INTO v_stale FROM unnest(p_keys, p_seen) AS e(k, seen)
          LEFT JOIN kv ON kv.key = e.k AND (kv.expires_at IS NULL OR kv.expires_at > p_now)
          WHERE kv.xmin::text IS DISTINCT FROM e.seen;
        IF v_stale > 0 THEN
          RETURN NULL;
        END IF;
        IF cardinality(p_delete_keys) > 0 THEN
          DELETE FROM kv WHERE key = ANY(p_delete_keys);
        END IF;
        IF cardinality(p_set_keys) > 0 THEN
          WITH w AS (
            INSERT INTO kv (key, value, expires_at, due_at)
              SELECT * FROM unnest(p_set_keys, p_set_values, p_set_expires, p_set_due)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = excluded.due_at
            RETURNING xmin::text AS x)
          SELECT min(x) INTO v_version FROM w;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_logs), 0) LOOP
          INSERT INTO log_heads (log, last_seq) VALUES (p_logs[i], 1)
            ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq INTO v_seq;
          INSERT INTO logs (log, seq, record) VALUES (p_logs[i], v_seq, p_records[i]);
        END LOOP;
        RETURN v_version;
      END
      $fn$;
    `,
  },
  {
    version: 3,
    name: 'transaction function: keys looked up one by one',
    sqlite: '',
    // Migration 2's function, same signature and outcome, with its reads made index lookups
    // whatever the table's size. Its version check joined the keys with kv, which the planner ran
    // as a hash join over a sequential scan of kv while the table held up to a few thousand rows
    // (0.31 ms of 0.5 at 995 rows, growing with the table; an index nested loop from about 5,000),
    // and plpgsql planned it afresh on most calls. Now each key is one primary-key lookup (a
    // LATERAL subquery that OFFSET 0 keeps from being flattened into a join), deletes go key by
    // key, and the function's plans are generic, planned once per connection
    // (docs/performance.md, "Metered calls: where the time goes").
    postgres: `
      CREATE OR REPLACE FUNCTION aib_tx(p_keys text[], p_seen text[], p_now bigint,
          p_set_keys text[], p_set_values text[], p_set_expires bigint[], p_set_due bigint[],
          p_delete_keys text[], p_logs text[], p_records text[]) RETURNS text
      LANGUAGE plpgsql
      SET plan_cache_mode = force_generic_plan
      AS $fn$
      DECLARE
        v_key text;
        v_stale int;
        v_seq bigint;
        v_version text := '';
      BEGIN
        FOREACH v_key IN ARRAY p_keys LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended(v_key, 0));
        END LOOP;
        SELECT count(*) INTO v_stale FROM unnest(p_keys, p_seen) AS e(k, seen)
          LEFT JOIN LATERAL (
            SELECT kv.xmin::text AS v FROM kv
              WHERE kv.key = e.k AND (kv.expires_at IS NULL OR kv.expires_at > p_now) OFFSET 0
          ) AS r ON true
          WHERE r.v IS DISTINCT FROM e.seen;
        IF v_stale > 0 THEN
          RETURN NULL;
        END IF;
        FOREACH v_key IN ARRAY coalesce(p_delete_keys, ARRAY[]::text[]) LOOP
          DELETE FROM kv WHERE key = v_key;
        END LOOP;
        IF cardinality(p_set_keys) > 0 THEN
          WITH w AS (
            INSERT INTO kv (key, value, expires_at, due_at)
              SELECT * FROM unnest(p_set_keys, p_set_values, p_set_expires, p_set_due)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, due_at = excluded.due_at
            RETURNING xmin::text AS x)
          SELECT min(x) INTO v_version FROM w;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_logs), 0) LOOP
          INSERT INTO log_heads (log, last_seq) VALUES (p_logs[i], 1)
            ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq INTO v_seq;
          INSERT INTO logs (log, seq, record) VALUES (p_logs[i], v_seq, p_records[i]);
        END LOOP;
        RETURN v_version;
      END
      $fn$;
    `,
  },
  {
    version: 4,
    name: 'sqlite: log heads written when a log starts or is trimmed',
    // No statement: what changes is what SQLite's `log_heads.last_seq` means. It was the last
    // sequence number handed out, rewritten by every append (a page of the WAL per transaction
    // and log); it is now the highest one when the log was last trimmed (0 when it started), and
    // an append takes one past the larger of it and the log's last record. A file written this way
    // must not be appended to by an earlier release, which would count on from a stale head: this
    // version makes them refuse it. PostgreSQL keeps its heads (several servers append at once,
    // and the row lock is what orders them): nothing changes there.
    sqlite: '',
    postgres: '',
  },
  {
    version: 5,
    name: 'transaction function: a rewritten row keeps its expiry within TTL/256',
    sqlite: '',
    // Migration 3's function, same signature, with one change: an upsert keeps the row's live
    // expiry when the new one is within 1/256 of a TTL of an hour or more (keepsExpiry in
    // canonicalJson.ts, as SQLite does in process). Day rows and spend windows are rewritten by
    // every metered call with a new expiry, and a changed indexed column makes PostgreSQL's update
    // a non-HOT one: a new entry in the primary key and the expires_at index each time, which
    // vacuum then has to remove. Kept, the update is HOT when the page has room.
    postgres: `
      CREATE OR REPLACE FUNCTION aib_tx(p_keys text[], p_seen text[], p_now bigint,
          p_set_keys text[], p_set_values text[], p_set_expires bigint[], p_set_due bigint[],
          p_delete_keys text[], p_logs text[], p_records text[]) RETURNS text
      LANGUAGE plpgsql
      SET plan_cache_mode = force_generic_plan
      AS $fn$
      DECLARE
        v_key text;
        v_stale int;
        v_seq bigint;
        v_version text := '';
      BEGIN
        FOREACH v_key IN ARRAY p_keys LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended(v_key, 0));
        END LOOP;
        SELECT count(*) INTO v_stale FROM unnest(p_keys, p_seen) AS e(k, seen)
          LEFT JOIN LATERAL (
            SELECT kv.xmin::text AS v FROM kv
              WHERE kv.key = e.k AND (kv.expires_at IS NULL OR kv.expires_at > p_now) OFFSET 0
          ) AS r ON true
          WHERE r.v IS DISTINCT FROM e.seen;
        IF v_stale > 0 THEN
          RETURN NULL;
        END IF;
        FOREACH v_key IN ARRAY coalesce(p_delete_keys, ARRAY[]::text[]) LOOP
          DELETE FROM kv WHERE key = v_key;
        END LOOP;
        IF cardinality(p_set_keys) > 0 THEN
          WITH w AS (
            INSERT INTO kv (key, value, expires_at, due_at)
              SELECT * FROM unnest(p_set_keys, p_set_values, p_set_expires, p_set_due)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, due_at = excluded.due_at,
              expires_at = CASE WHEN kv.expires_at > p_now AND excluded.expires_at - p_now >= 3600000
                AND abs(excluded.expires_at - kv.expires_at) * 256 <= excluded.expires_at - p_now
                THEN kv.expires_at ELSE excluded.expires_at END
            RETURNING xmin::text AS x)
          SELECT min(x) INTO v_version FROM w;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_logs), 0) LOOP
          INSERT INTO log_heads (log, last_seq) VALUES (p_logs[i], 1)
            ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq INTO v_seq;
          INSERT INTO logs (log, seq, record) VALUES (p_logs[i], v_seq, p_records[i]);
        END LOOP;
        RETURN v_version;
      END
      $fn$;
    `,
  },
  {
    version: 6,
    name: 'transaction function: a row version is proved with its value',
    sqlite: '',
    // Migration 5's function, same signature, with one change: a key's version in p_seen is
    // `<xmin>:<sha256 of the value text>`, and the check compares both. A transaction id alone does
    // not name one row version for ever: a crash of PostgreSQL loses the commits no WAL flush
    // covered (a hold is committed with synchronous_commit = off), and recovery hands their ids out
    // again, so a row another instance writes after the crash can carry the very xmin this process
    // remembers for a row the crash took away. The check then passed on a value the store no
    // longer held, and the plan wrote over that instance's write (a credit or a settle lost).
    // With the value's hash, a check passes only on the text the plan read.
    postgres: `
      CREATE OR REPLACE FUNCTION aib_tx(p_keys text[], p_seen text[], p_now bigint,
          p_set_keys text[], p_set_values text[], p_set_expires bigint[], p_set_due bigint[],
          p_delete_keys text[], p_logs text[], p_records text[]) RETURNS text
      LANGUAGE plpgsql
      SET plan_cache_mode = force_generic_plan
      AS $fn$
      DECLARE
        v_key text;
        v_stale int;
        v_seq bigint;
        v_version text := '';
      BEGIN
        FOREACH v_key IN ARRAY p_keys LOOP
          PERFORM pg_advisory_xact_lock(hashtextextended(v_key, 0));
        END LOOP;
        SELECT count(*) INTO v_stale FROM unnest(p_keys, p_seen) AS e(k, seen)
          LEFT JOIN LATERAL (
            SELECT kv.xmin::text || ':' || encode(sha256(convert_to(kv.value, 'UTF8')), 'hex') AS v FROM kv
              WHERE kv.key = e.k AND (kv.expires_at IS NULL OR kv.expires_at > p_now) OFFSET 0
          ) AS r ON true
          WHERE r.v IS DISTINCT FROM e.seen;
        IF v_stale > 0 THEN
          RETURN NULL;
        END IF;
        FOREACH v_key IN ARRAY coalesce(p_delete_keys, ARRAY[]::text[]) LOOP
          DELETE FROM kv WHERE key = v_key;
        END LOOP;
        IF cardinality(p_set_keys) > 0 THEN
          WITH w AS (
            INSERT INTO kv (key, value, expires_at, due_at)
              SELECT * FROM unnest(p_set_keys, p_set_values, p_set_expires, p_set_due)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, due_at = excluded.due_at,
              expires_at = CASE WHEN kv.expires_at > p_now AND excluded.expires_at - p_now >= 3600000
                AND abs(excluded.expires_at - kv.expires_at) * 256 <= excluded.expires_at - p_now
                THEN kv.expires_at ELSE excluded.expires_at END
            RETURNING xmin::text AS x)
          SELECT min(x) INTO v_version FROM w;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_logs), 0) LOOP
          INSERT INTO log_heads (log, last_seq) VALUES (p_logs[i], 1)
            ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq INTO v_seq;
          INSERT INTO logs (log, seq, record) VALUES (p_logs[i], v_seq, p_records[i]);
        END LOOP;
        RETURN v_version;
      END
      $fn$;
    `,
  },
  {
    version: 7,
    name: 'transaction function: fewer statements per call',
    sqlite: '',
    // Migration 6's function, same signature and result, in fewer statements: PL/pgSQL runs each
    // statement through the executor (start, run, end), and a metered call's hold and settle each
    // ran about a dozen: one lock statement per key (seven for a hold), the upsert inside a CTE to
    // read the rows' xmin. Now the locks are one statement (in p_keys' order, which the caller
    // sorts so two transactions never wait on each other in a circle), and the written rows'
    // version is this transaction's id: every row an upsert writes carries it as its xmin (no
    // subtransaction runs here; xmin is the id's low 32 bits). The deletes stay one statement
    // each (a call deletes one row at most, its hold): `key = ANY (p_delete_keys)` under the
    // generic plan scans the whole table (queryPlans.test.ts).
    postgres: `
      CREATE OR REPLACE FUNCTION aib_tx(p_keys text[], p_seen text[], p_now bigint,
          p_set_keys text[], p_set_values text[], p_set_expires bigint[], p_set_due bigint[],
          p_delete_keys text[], p_logs text[], p_records text[]) RETURNS text
      LANGUAGE plpgsql
      SET plan_cache_mode = force_generic_plan
      AS $fn$
      DECLARE
        v_key text;
        v_stale int;
        v_seq bigint;
        v_version text := '';
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(l.k, 0))
          FROM unnest(p_keys) WITH ORDINALITY AS l(k, n) ORDER BY l.n;
        SELECT count(*) INTO v_stale FROM unnest(p_keys, p_seen) AS e(k, seen)
          LEFT JOIN LATERAL (
            SELECT kv.xmin::text || ':' || encode(sha256(convert_to(kv.value, 'UTF8')), 'hex') AS v FROM kv
              WHERE kv.key = e.k AND (kv.expires_at IS NULL OR kv.expires_at > p_now) OFFSET 0
          ) AS r ON true
          WHERE r.v IS DISTINCT FROM e.seen;
        IF v_stale > 0 THEN
          RETURN NULL;
        END IF;
        FOREACH v_key IN ARRAY coalesce(p_delete_keys, ARRAY[]::text[]) LOOP
          DELETE FROM kv WHERE key = v_key;
        END LOOP;
        IF cardinality(p_set_keys) > 0 THEN
          INSERT INTO kv (key, value, expires_at, due_at)
            SELECT * FROM unnest(p_set_keys, p_set_values, p_set_expires, p_set_due)
          ON CONFLICT (key) DO UPDATE SET value = excluded.value, due_at = excluded.due_at,
            expires_at = CASE WHEN kv.expires_at > p_now AND excluded.expires_at - p_now >= 3600000
              AND abs(excluded.expires_at - kv.expires_at) * 256 <= excluded.expires_at - p_now
              THEN kv.expires_at ELSE excluded.expires_at END;
          v_version := (pg_current_xact_id()::text::bigint % 4294967296)::text;
        END IF;
        FOR i IN 1 .. coalesce(cardinality(p_logs), 0) LOOP
          INSERT INTO log_heads (log, last_seq) VALUES (p_logs[i], 1)
            ON CONFLICT (log) DO UPDATE SET last_seq = log_heads.last_seq + 1 RETURNING last_seq INTO v_seq;
          INSERT INTO logs (log, seq, record) VALUES (p_logs[i], v_seq, p_records[i]);
        END LOOP;
        RETURN v_version;
      END
      $fn$;
    `,
  },
];

/** The newest schema version this release knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/**
 * A store migrated by a newer release may hold rows this one would misread or overwrite, and
 * migrations never run backwards: refuse to start, saying what to do.
 */
export function refuseNewerSchema(applied: Iterable<number>, store: string): void {
  const newest = Math.max(0, ...applied);
  if (newest > SCHEMA_VERSION) {
    throw new CoreError(
      'CONFLICT',
      `storage: ${store} was written by a newer release of ai-backend (schema version ${newest}; this release knows up to ${SCHEMA_VERSION}). Run that release or a later one; to go back to this one, restore a backup taken before the upgrade (a store is never migrated down).`,
    );
  }
}

/** The table that records applied versions (same text for both engines). */
export const MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)';

/** Expired `kv` rows one purge statement deletes (purgeExpired on both engines: a short transaction each). */
export const PURGE_BATCH = 1000;

/** Upper bound of keys starting with `prefix` in binary order (range scans on the primary key). */
export function prefixEnd(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}
