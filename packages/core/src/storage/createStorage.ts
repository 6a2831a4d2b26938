import type { ResolvedConfig } from '../config/schema.js';
import { MemoryStorage } from './MemoryStorage.js';
import type { Storage } from './Storage.js';

export type StorageConfig = ResolvedConfig['storage'];

/** Open the configured backend. File and redis backends are loaded lazily so memory users pay nothing. */
export async function createStorage(config: StorageConfig): Promise<Storage> {
  switch (config.type) {
    case 'memory':
      return new MemoryStorage();
    case 'file': {
      const { FileStorage } = await import('./FileStorage.js');
      return FileStorage.open(config.dir);
    }
    case 'redis': {
      const { RedisStorage } = await import('./RedisStorage.js');
      return RedisStorage.connect(config.redis);
    }
  }
}
