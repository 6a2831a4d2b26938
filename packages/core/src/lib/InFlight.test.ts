import { describe, expect, it } from 'vitest';
import { InFlight } from './InFlight.js';

/** A promise with its resolve and reject outside. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('InFlight', () => {
  it('tracks a promise until it ends, fulfilled or rejected, and returns it as given', async () => {
    const inFlight = new InFlight();
    const a = deferred<number>();
    const b = deferred();
    expect(inFlight.track(a.promise)).toBe(a.promise);
    inFlight.track(b.promise).catch(() => undefined);
    expect(inFlight.size).toBe(2);
    a.resolve(1);
    b.reject(new Error('boom'));
    await tick();
    expect(inFlight.size).toBe(0);
  });

  it('settled() waits for every tracked promise, also those tracked while it waits, and never rejects', async () => {
    const inFlight = new InFlight();
    const first = deferred();
    const second = deferred();
    inFlight.track(first.promise).catch(() => undefined);
    let done = false;
    const waiting = inFlight.settled().then(() => (done = true));
    // The first one's end starts another: settled() waits for that one as well.
    first.reject(new Error('failed write'));
    inFlight.track(second.promise);
    await tick();
    expect(done).toBe(false);
    second.resolve();
    await waiting;
    expect(done).toBe(true);
  });

  it('settled(timeoutMs) gives up after the timeout, and resolves at once when nothing runs', async () => {
    const inFlight = new InFlight();
    await inFlight.settled(60_000); // nothing tracked: no timer to wait for
    inFlight.track(new Promise(() => undefined)); // never ends
    const t0 = performance.now();
    await inFlight.settled(50);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(45);
    expect(inFlight.size).toBe(1);
  });
});
