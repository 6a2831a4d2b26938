import { describe, expect, it } from 'vitest';
import { KeyedMutex } from './KeyedMutex.js';

describe('KeyedMutex', () => {
  it('runs holders of the same key one after another, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const run = async (name: string, keys: string[]) => {
      const unlock = await mutex.lock(keys);
      order.push(`${name}+`);
      await new Promise((r) => setImmediate(r));
      order.push(`${name}-`);
      unlock();
    };
    await Promise.all([run('a', ['k']), run('b', ['k']), run('c', ['k'])]);
    expect(order).toEqual(['a+', 'a-', 'b+', 'b-', 'c+', 'c-']);
    expect(mutex.size).toBe(0);
  });

  it('lets holders of different keys overlap, and sorted multi-key holders never deadlock', async () => {
    const mutex = new KeyedMutex();
    const u1 = await mutex.lock(['x']);
    const u2 = await mutex.lock(['y']); // not blocked by x
    u1();
    u2();
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const unlock = await mutex.lock(i % 2 ? ['a', 'b'] : ['b', 'c'].sort());
        await new Promise((r) => setImmediate(r));
        unlock();
        return i;
      }),
    );
    expect(results).toHaveLength(50);
    expect(mutex.size).toBe(0);
  });

  it('a second release call is harmless', async () => {
    const mutex = new KeyedMutex();
    const unlock = await mutex.lock(['k']);
    unlock();
    unlock();
    const again = await mutex.lock(['k']);
    again();
    expect(mutex.size).toBe(0);
  });
});
