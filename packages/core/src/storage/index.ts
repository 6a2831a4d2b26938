export type { Storage, SetOptions, IncrementOptions, LogEntry } from './Storage.js';
export { MemoryStorage } from './MemoryStorage.js';
export { createStorage, type StorageConfig } from './createStorage.js';
