export type {
  Storage,
  SetOptions,
  IncrementOptions,
  LogEntry,
  ReadLogOptions,
  TransactOptions,
  TxRead,
  TxWrite,
  TxPlan,
} from '../kernel/Storage.js';
export { MemoryStorage } from './MemoryStorage.js';
export { createStorage, sqliteFile, type StorageConfig } from './createStorage.js';
// The SQLite, PostgreSQL and Redis stores are not exported as values: createStorage imports the
// configured one on first use, and exporting them here would load all three (seven modules)
// into every server at start, the memory store's included. Open one with createStorage.
export type { SqliteStorageOptions } from './sql/SqliteStorage.js';
export type { PostgresStorageOptions } from './sql/PostgresStorage.js';
export type { RedisStorageOptions } from './RedisStorage.js';
