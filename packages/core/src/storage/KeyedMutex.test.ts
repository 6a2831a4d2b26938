import { describe, expect, it } from 'vitest';
import { CoreError } from '../kernel/CoreError.js';
import { KeyedMutex, unavailableFailure } from './KeyedMutex.js';

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

  it('a holder released with a failure fails the waiters queued behind it on its keys, at once; later arrivals and other keys run', async () => {
    const mutex = new KeyedMutex();
    const outage = new Error('store unreachable');
    const holder = await mutex.lock(['a', 'k']);
    const onOther = await mutex.lock(['z']);
    // Three waiters queued on k (one of them also holds b first), and one that holds b next.
    const outcome = (p: Promise<() => void>) =>
      p.then(
        (unlock) => {
          unlock();
          return 'ran';
        },
        (err: unknown) => (err === outage ? 'failed with the holder' : 'other error'),
      );
    const waiters = [outcome(mutex.lock(['k'])), outcome(mutex.lock(['b', 'k'])), outcome(mutex.lock(['k']))];
    await new Promise((r) => setImmediate(r));
    const afterB = outcome(mutex.lock(['b']));
    holder(outage);
    expect(await Promise.all(waiters)).toEqual(['failed with the holder', 'failed with the holder', 'failed with the holder']);
    // b was released by the waiter that failed, without its failure.
    expect(await afterB).toBe('ran');
    expect(await outcome(mutex.lock(['k']))).toBe('ran');
    onOther();
    expect(mutex.size).toBe(0);
  });

  it("only a store outage is passed on: an UNAVAILABLE error, not a plan's own error", () => {
    const down = new CoreError('UNAVAILABLE', 'storage unavailable');
    expect(unavailableFailure(down)).toBe(down);
    expect(unavailableFailure(new CoreError('INVALID_PARAMS', 'bad'))).toBeUndefined();
    expect(unavailableFailure(new Error('plan threw'))).toBeUndefined();
  });
});
