import { dirname, resolve } from 'node:path';
import { widerThanPrivate, type WidePath } from '../lib/privateFiles.js';
import { sqliteFile, type StorageConfig } from './createStorage.js';

/**
 * The server's data paths that already exist and are open to other users: the data directory
 * (the SQLite database, `oauth.db` and `security.log` live there by default) and, on SQLite, the
 * database's directory, the file and its WAL and shared-memory files. What the server creates is
 * private (lib/privateFiles.ts); these are what an operator or an older version created wider,
 * which the server reports at start rather than changing on its own.
 */
export function privateDataWarnings(config: StorageConfig): WidePath[] {
  const paths = [resolve(config.dir)];
  if (config.type === 'sqlite') {
    const file = resolve(sqliteFile(config));
    paths.push(dirname(file), file, `${file}-wal`, `${file}-shm`);
  }
  return [...new Set(paths)].map(widerThanPrivate).filter((w): w is WidePath => w !== undefined);
}
