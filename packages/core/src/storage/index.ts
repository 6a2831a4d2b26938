export type { Storage, SetOptions, IncrementOptions, LogEntry, ReadLogOptions, TxRead, TxWrite, TxPlan } from '../kernel/Storage.js';
export { MemoryStorage } from './MemoryStorage.js';
export { createStorage, sqliteFile, type StorageConfig } from './createStorage.js';
export { SqliteStorage, type SqliteStorageOptions } from './sql/SqliteStorage.js';
export { PostgresStorage, type PostgresStorageOptions } from './sql/PostgresStorage.js';
export { RedisStorage, type RedisStorageOptions } from './RedisStorage.js';
