import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryStorage } from './MemoryStorage.js';

// The clock is the test's (Date only): how many keys have expired at each sweep must not depend
// on how fast a loaded machine runs the loops (a real 1 ms ttl left 2,625 keys under CI's load).
afterEach(() => {
  vi.useRealTimers();
});
const advance = (ms: number) => vi.setSystemTime(Date.now() + ms);

describe('MemoryStorage expired slots', () => {
  it('are swept as writes with a ttl come, so keys never read again do not pile up; live ones stay', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = new MemoryStorage();
    await store.set('kept', { a: 1 }, { ttlMs: 60_000 });
    await store.set('forever', 1);
    for (let i = 0; i < 3000; i++) await store.increment(`rl:${i}:0`, 1, { ttlMs: 1 });
    advance(5);
    for (let i = 0; i < 3000; i++) {
      await store.set(`cache:${i}`, 'x', { ttlMs: 1 });
      // Each key outlives a few of the writes after it, as a window or a cached answer does.
      if (i % 100 === 99) advance(2);
    }
    // 6,002 keys were written; the expired ones went with the sweeps.
    expect(store.size).toBeLessThan(2100);
    expect(await store.get('kept')).toEqual({ a: 1 });
    expect(await store.get('forever')).toBe(1);
  });
});
