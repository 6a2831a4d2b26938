/** The two SQLite bindings the embedded store runs on; both read and write the same file format. */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

/** `storage.sqlite.driver`: 'auto' (default) takes node:sqlite where Node ships it, else better-sqlite3. */
export type SqliteDriverChoice = 'auto' | SqliteDriverName;

export type SqliteValue = string | number | null;

/** A prepared statement; numbers bind as SQLite REAL on both drivers, as they always did. */
export interface SqliteStatement {
  get(...params: SqliteValue[]): unknown;
  all(...params: SqliteValue[]): unknown[];
  run(...params: SqliteValue[]): { changes: number | bigint };
}

/** One open database file, synchronous like both bindings. */
export interface SqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  /** Runs `fn` inside BEGIN IMMEDIATE … COMMIT; a throw rolls back and is rethrown. Not nestable. */
  immediate<T>(fn: () => T): T;
  close(): void;
}

export interface SqliteDriver {
  readonly name: SqliteDriverName;
  /** Opens (creating when missing) the file, with no busy wait: a locked file fails at once. */
  open(file: string): SqliteDatabase;
  /** An error raised by SQLite itself (I/O, lock, corrupt file), as opposed to a bug of ours. */
  isSqliteError(err: unknown): boolean;
  /** SQLITE_BUSY or SQLITE_LOCKED: another connection holds the file. */
  isBusy(err: unknown): boolean;
}
