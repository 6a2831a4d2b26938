import { MemoryStorage } from '../MemoryStorage.js';

/**
 * A memory store whose next read of the `armed` key reads the value at once and answers it only
 * on `release()`: a read that began before a change and lands after it (a slow store), for tests
 * of what a caller does with such a read.
 */
export class LateReads extends MemoryStorage {
  armed: string | undefined;
  release: (() => void) | undefined;

  override async get<T = unknown>(key: string): Promise<T | undefined> {
    const value = await super.get<T>(key);
    if (key === this.armed) {
      this.armed = undefined;
      await new Promise<void>((r) => (this.release = r));
    }
    return value;
  }
}
