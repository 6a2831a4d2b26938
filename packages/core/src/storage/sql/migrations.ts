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
 *   (log, seq) on the primary key; `log_heads` hands out sequence numbers under a row lock.
 */
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
];

/** The table that records applied versions (same text for both engines). */
export const MIGRATIONS_TABLE = 'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)';

/** Upper bound of keys starting with `prefix` in binary order (range scans on the primary key). */
export function prefixEnd(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}
