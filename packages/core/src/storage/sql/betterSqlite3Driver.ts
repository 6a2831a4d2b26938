import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteDriver, SqliteStatement } from './SqliteDriver.js';

/**
 * Every better-sqlite3 handle (database, statement) this process opened, kept until it exits.
 * On Node 24, better-sqlite3 12's native destructor — run when V8 collects a handle — calls
 * node::RemoveEnvironmentCleanupHook outside any context and aborts the whole process
 * (`Assertion failed: (env) != nullptr`, WiseLibs/better-sqlite3#1515, closed without a fix for
 * 12.x; 13.x moved to Node-API but needs Node 22, and this driver is what Node 20 runs on). A
 * handle that is never collected never runs that destructor, and a closed one is only a small JS
 * wrapper. Statements better-sqlite3 would prepare behind our back are avoided (`exec` instead of
 * `pragma`); BEGIN, COMMIT and ROLLBACK are prepared once per database and retained.
 */
const retained = new Set<object>();
const retain = <T extends object>(handle: T): T => (retained.add(handle), handle);

type Database = BetterSqlite3.Database;

const sqliteCode = (err: unknown): string => String((err as { code?: unknown } | null)?.code ?? '');

class BetterSqlite3Database implements SqliteDatabase {
  // Our own BEGIN/COMMIT rather than db.transaction(fn): that builds four wrapper functions and
  // defines twenty properties on them for every call (a new fn each time), about 5% of a metered
  // call's billing CPU on this store. Transactions here are never nested (SqliteDatabase.immediate).
  private readonly begin: BetterSqlite3.Statement;
  private readonly commit: BetterSqlite3.Statement;
  private readonly rollback: BetterSqlite3.Statement;

  constructor(private readonly db: Database) {
    this.begin = retain(db.prepare('BEGIN IMMEDIATE'));
    this.commit = retain(db.prepare('COMMIT'));
    this.rollback = retain(db.prepare('ROLLBACK'));
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  prepare(sql: string): SqliteStatement {
    return retain(this.db.prepare(sql)) as SqliteStatement;
  }

  immediate<T>(fn: () => T): T {
    this.begin.run();
    try {
      const result = fn();
      this.commit.run();
      return result;
    } catch (err) {
      // SQLite may already have rolled back on its own (some I/O and full-disk errors do).
      if (this.db.inTransaction) this.rollback.run();
      throw err;
    }
  }

  close(): void {
    this.db.close();
  }
}

export type BetterSqlite3Load = { driver: SqliteDriver } | { installed: boolean; reason: string; cause: unknown };

/**
 * better-sqlite3, when it is installed and its native binary loads on this Node. The binary is
 * only looked for when a database is constructed, so one in-memory database is opened here: a
 * missing or wrong-ABI binary then fails at start, with the fix, not at the first query.
 */
export async function betterSqlite3Driver(): Promise<BetterSqlite3Load> {
  let Ctor: typeof BetterSqlite3;
  try {
    ({ default: Ctor } = await import('better-sqlite3'));
  } catch (err) {
    const code = sqliteCode(err);
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
    return { installed: !missing, reason: (err as Error).message, cause: err };
  }
  try {
    retain(new Ctor(':memory:')).close();
  } catch (err) {
    return { installed: true, reason: (err as Error).message, cause: err };
  }
  return {
    driver: {
      name: 'better-sqlite3',
      // timeout 0: a file locked by another server fails at once instead of waiting 5 s.
      open: (file) => new BetterSqlite3Database(retain(new Ctor(file, { timeout: 0 }))),
      isSqliteError: (err) => sqliteCode(err).startsWith('SQLITE_'),
      isBusy: (err) => /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(err)),
    },
  };
}
