import type { SqliteDatabase, SqliteDriver, SqliteStatement, SqliteValue } from './SqliteDriver.js';

/**
 * What the store uses of node:sqlite, typed here because the repository's @types/node is the
 * Node 20 line, which has no node:sqlite.
 */
interface NodeSqliteModule {
  DatabaseSync: new (file: string, options?: { open?: boolean }) => NodeDatabaseSync;
}
interface NodeStatementSync {
  get(...p: SqliteValue[]): unknown;
  all(...p: SqliteValue[]): unknown[];
  run(...p: SqliteValue[]): { changes: number | bigint };
  /** Node 22.16+ and 23.11+. */
  setReturnArrays?(enabled: boolean): void;
  columns?(): Array<{ name: string }>;
}
interface NodeDatabaseSync {
  exec(sql: string): void;
  prepare(sql: string): NodeStatementSync;
  close(): void;
}

/**
 * A statement whose rows are plain objects built here from node:sqlite's array rows. node:sqlite's
 * own row objects have a null prototype and are created in V8's dictionary mode, so every field
 * read misses the inline caches: at the store level a get took about 1 µs longer than on
 * better-sqlite3 (bench/sqliteDrivers.mjs). Objects built by the same assignments share one hidden
 * class. Where Node lacks array rows (22.13–22.15) the statement is used as it is.
 */
function withPlainRows(stmt: NodeStatementSync): SqliteStatement {
  if (!stmt.setReturnArrays || !stmt.columns) return stmt;
  const names = stmt.columns().map((c) => c.name);
  if (names.length === 0) return stmt;
  stmt.setReturnArrays(true);
  const toObject = (row: unknown[]) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) o[names[i]!] = row[i];
    return o;
  };
  return {
    get: (...p) => {
      const row = stmt.get(...p) as unknown[] | undefined;
      return row && toObject(row);
    },
    all: (...p) => (stmt.all(...p) as unknown[][]).map(toObject),
    run: (...p) => stmt.run(...p),
  };
}

/** node:sqlite raises every SQLite failure as ERR_SQLITE_ERROR with SQLite's result code in `errcode`. */
const sqliteErrcode = (err: unknown): number | undefined => {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  return e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number' ? e.errcode : undefined;
};
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

/** The built-in module, or undefined on a Node without it (20, 22.0–22.12 unflagged). */
function loadModule(): NodeSqliteModule | undefined {
  const emit = process.emitWarning;
  // Node 22 prints "ExperimentalWarning: SQLite is an experimental feature" the first time
  // node:sqlite loads (24 and later do not). The user did not opt into an experiment: the store
  // is the default, tested on every Node CI runs. Only that one warning is dropped.
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    if (rest[0] === 'ExperimentalWarning' && String(warning).startsWith('SQLite ')) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    // getBuiltinModule (20.16+, 22.3+) answers undefined for a module this Node lacks or keeps
    // behind a flag, where import() would throw.
    return process.getBuiltinModule?.('node:sqlite') as NodeSqliteModule | undefined;
  } finally {
    process.emitWarning = emit;
  }
}

class NodeSqliteDatabase implements SqliteDatabase {
  private readonly begin: SqliteStatement;
  private readonly commit: SqliteStatement;

  constructor(private readonly db: NodeDatabaseSync) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  prepare(sql: string): SqliteStatement {
    return withPlainRows(this.db.prepare(sql));
  }

  immediate<T>(fn: () => T): T {
    this.begin.run();
    try {
      const result = fn();
      this.commit.run();
      return result;
    } catch (err) {
      // SQLite may already have rolled back on its own (some I/O and full-disk errors do); a
      // second ROLLBACK then fails with "no transaction is active", which says nothing new.
      try {
        this.db.exec('ROLLBACK');
      } catch {
        /* already rolled back */
      }
      throw err;
    }
  }

  close(): void {
    this.db.close();
  }
}

/**
 * The driver built into Node 22.13+. Its handles are ordinary V8 objects with no native cleanup
 * hook, so unlike better-sqlite3 12 on Node 24 nothing needs to be kept alive until exit
 * (SqliteStorage.handles.test.ts runs on both).
 */
export function nodeSqliteDriver(): SqliteDriver | undefined {
  const mod = loadModule();
  if (!mod?.DatabaseSync) return undefined;
  return {
    name: 'node:sqlite',
    // The default busy timeout is 0: a file locked by another server fails at once.
    open: (file) => new NodeSqliteDatabase(new mod.DatabaseSync(file)),
    isSqliteError: (err) => sqliteErrcode(err) !== undefined,
    isBusy: (err) => {
      const code = sqliteErrcode(err);
      // Extended result codes keep the primary code in the low byte (SQLITE_BUSY_SNAPSHOT = 517).
      return code !== undefined && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED);
    },
  };
}
