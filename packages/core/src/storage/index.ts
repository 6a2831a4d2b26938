export type { Storage, SetOptions, IncrementOptions, LogEntry } from './Storage.js';
export { MemoryStorage } from './MemoryStorage.js';
export { createStorage, type StorageConfig } from './createStorage.js';
export { FileStorage, type FileStorageOptions } from './FileStorage.js';
export { RedisStorage, type RedisStorageOptions } from './RedisStorage.js';
