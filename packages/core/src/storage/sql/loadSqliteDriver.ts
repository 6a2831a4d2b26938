import { CoreError } from '../../kernel/CoreError.js';
import { installCommand, OPTIONAL_PACKAGES } from '../../config/optionalPackages.js';
import { NODE_SQLITE_SINCE } from '../../lib/nodeShipsSqlite.js';
import type { SqliteDriver, SqliteDriverChoice } from './SqliteDriver.js';

const INSTALL = installCommand(OPTIONAL_PACKAGES.betterSqlite3);

/**
 * The driver `choice` names, loaded on first use (memory, redis and postgres users load neither).
 * 'auto' prefers node:sqlite: it is part of Node, so nothing is compiled or downloaded at install.
 * Fails with NOT_CONFIGURED, naming the package and its install command, when the chosen driver
 * cannot load here.
 */
export async function loadSqliteDriver(choice: SqliteDriverChoice = 'auto'): Promise<SqliteDriver> {
  if (choice !== 'better-sqlite3') {
    const { nodeSqliteDriver } = await import('./nodeSqliteDriver.js');
    const driver = nodeSqliteDriver();
    if (driver) return driver;
    if (choice === 'node:sqlite') {
      throw new CoreError(
        'NOT_CONFIGURED',
        `storage: storage.sqlite.driver is 'node:sqlite', but Node ${process.version} does not ship node:sqlite (it needs Node ${NODE_SQLITE_SINCE} or later). ` +
          `Upgrade Node, or set storage.sqlite.driver to 'auto' and install better-sqlite3 (${INSTALL}).`,
      );
    }
  }
  const { betterSqlite3Driver } = await import('./betterSqlite3Driver.js');
  const loaded = await betterSqlite3Driver();
  if ('driver' in loaded) return loaded.driver;
  const why =
    choice === 'better-sqlite3'
      ? `storage.sqlite.driver is 'better-sqlite3'`
      : `Node ${process.version} does not ship node:sqlite (Node ${NODE_SQLITE_SINCE} or later does)`;
  const fix = loaded.installed
    ? `better-sqlite3 is installed but its native binary does not load (${loaded.reason}): rebuild it with \`npm rebuild better-sqlite3\` (npm 12 runs it only when the app's allowScripts lists better-sqlite3)`
    : `install it: ${INSTALL}`;
  throw new CoreError(
    'NOT_CONFIGURED',
    `storage: the embedded SQLite store needs the better-sqlite3 package here: ${why}. ${fix}; or run on Node ${NODE_SQLITE_SINCE}+.`,
    {
      cause: loaded.cause,
    },
  );
}
