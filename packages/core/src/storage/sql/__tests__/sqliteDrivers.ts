import { loadSqliteDriver } from '../loadSqliteDriver.js';
import type { SqliteDriverName } from '../SqliteDriver.js';

/**
 * The SQLite drivers that load on the Node running the tests: node:sqlite on 22.13+, and
 * better-sqlite3 wherever its native binary loads (Node 20, 22 and 24 in CI; on Node 26 it may
 * not build, and its suites then run on node:sqlite alone). Suites over the SQLite store run once
 * per driver listed here.
 */
export const SQLITE_DRIVERS: SqliteDriverName[] = [];
for (const name of ['node:sqlite', 'better-sqlite3'] as const) {
  try {
    await loadSqliteDriver(name);
    SQLITE_DRIVERS.push(name);
  } catch {
    // Not on this Node: loadSqliteDriver.test.ts checks which one must be here.
  }
}
