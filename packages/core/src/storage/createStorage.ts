import { join } from 'node:path';
import type { StorageConfig as ResolvedStorageSection } from '../config/sections/storage.js';
import { MemoryStorage } from './MemoryStorage.js';
import type { Storage } from '../kernel/Storage.js';

/** `retention` is optional here: it is the server's business (services/retention), not the store's. */
type RetentionOptional<S> = S extends { retention: infer R } ? Omit<S, 'retention'> & { retention?: R } : S;
/** What createStorage takes: one backend's options of a resolved `storage` section. */
export type StorageConfig = RetentionOptional<ResolvedStorageSection>;

/** The SQLite file of a storage config: `sqlite.file`, or `ai-backend.db` in `dir`. */
export function sqliteFile(config: { dir: string; sqlite: { file?: string | undefined } }): string {
  return config.sqlite.file ?? join(config.dir, 'ai-backend.db');
}

/**
 * Open the configured backend. Database drivers are loaded lazily so memory users pay nothing.
 * `holds: 'shared'` opens a store whose loss is recoverable (OAuth sessions: a lost one means
 * signing in again), so a Redis emptied under it is started afresh, not refused as a lost money
 * store (RedisStorageOptions.holds).
 */
export async function createStorage(config: StorageConfig, opts: { holds?: 'store' | 'shared' } = {}): Promise<Storage> {
  switch (config.type) {
    case 'memory':
      return new MemoryStorage();
    case 'sqlite': {
      const { SqliteStorage } = await import('./sql/SqliteStorage.js');
      return SqliteStorage.open({ file: sqliteFile(config), synchronous: config.sqlite.synchronous, driver: config.sqlite.driver });
    }
    case 'postgres': {
      const { PostgresStorage } = await import('./sql/PostgresStorage.js');
      return PostgresStorage.connect(config.postgres);
    }
    case 'redis': {
      const { RedisStorage } = await import('./RedisStorage.js');
      return RedisStorage.connect(opts.holds ? { ...config.redis, holds: opts.holds } : config.redis);
    }
  }
}
