import { describe, expect, it } from 'vitest';
import type { IncrementOptions } from '../../kernel/Storage.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { WindowLeases } from './WindowLeases.js';

/** A shared store whose increments are counted and answered after a turn of the event loop, as a networked one's are. */
function sharedStore() {
  const inner = new MemoryStorage();
  const store = {
    requests: 0,
    async increment(key: string, delta: number, opts?: IncrementOptions) {
      store.requests++;
      await new Promise((resolve) => setImmediate(resolve));
      return inner.increment(key, delta, opts);
    },
    value: async (key: string) => Number((await inner.get<number>(key)) ?? 0),
  };
  return store;
}

const W = 7; // window number
const WINDOW_MS = 60_000;

describe('WindowLeases', () => {
  it.each([1, 5, 16, 17, 120, 300, 1000])(
    'one instance admits exactly the limit (%i), with remaining counting down one by one',
    async (limit) => {
      const store = sharedStore();
      const leases = new WindowLeases();
      const used: number[] = [];
      let admitted = 0;
      for (let i = 0; i < limit + 5; i++) {
        const r = await leases.count(store, 'rl:toolCalls:u:a', W, WINDOW_MS, 1, limit);
        if (r.allowed) {
          admitted++;
          used.push(r.used);
        }
      }
      expect(admitted).toBe(limit);
      expect(used).toEqual(Array.from({ length: limit }, (_, i) => i + 1));
    },
  );

  it('a hot caller makes far fewer store requests than hits, and none for a hit its lease covers', async () => {
    const store = sharedStore();
    const leases = new WindowLeases();
    for (let i = 0; i < 300; i++) expect((await leases.count(store, 'k', W, WINDOW_MS, 1, 1000)).allowed).toBe(true);
    expect(store.requests).toBeLessThan(30);
    // The store's counter holds every admitted hit plus what is leased, never less.
    expect(await store.value(`k:${W}`)).toBeGreaterThanOrEqual(300);
    const before = store.requests;
    await leases.count(store, 'k', W, WINDOW_MS, 1, 1000);
    expect(store.requests).toBe(before);
  });

  it('near the limit every hit is counted in the store, and what was leased past it is given back', async () => {
    const store = sharedStore();
    const a = new WindowLeases();
    const b = new WindowLeases();
    // a leases ahead while there is room; b then takes hits one at a time up to the limit.
    await a.count(store, 'k', W, WINDOW_MS, 1, 200);
    await a.count(store, 'k', W, WINDOW_MS, 1, 200);
    const afterLease = await store.value(`k:${W}`);
    expect(afterLease).toBeGreaterThan(2);
    let bAdmitted = 0;
    for (let i = 0; i < 250; i++) if ((await b.count(store, 'k', W, WINDOW_MS, 1, 200)).allowed) bAdmitted++;
    // b was refused early only by what a still holds unused.
    expect(bAdmitted).toBe(200 - afterLease);
    await new Promise((resolve) => setImmediate(resolve));
    // a's lease is spent first, then a is refused like b.
    let aAdmitted = 0;
    for (let i = 0; i < 50; i++) if ((await a.count(store, 'k', W, WINDOW_MS, 1, 200)).allowed) aAdmitted++;
    expect(2 + aAdmitted + bAdmitted).toBe(200);
  });

  it.each([17, 100, 1000])(
    'two instances taking turns admit exactly the limit (%i), in order: the first refusal is the next hit',
    async (limit) => {
      const store = sharedStore();
      const instances = [new WindowLeases(), new WindowLeases()];
      const outcomes: boolean[] = [];
      for (let i = 0; i < limit + 10; i++) outcomes.push((await instances[i % 2]!.count(store, 'k', W, WINDOW_MS, 1, limit)).allowed);
      expect(outcomes.indexOf(false)).toBe(limit);
      expect(outcomes.filter(Boolean)).toHaveLength(limit);
    },
  );

  it('once another instance counts the same caller, no more leases: each hit is one store request', async () => {
    const store = sharedStore();
    const a = new WindowLeases();
    const b = new WindowLeases();
    for (let i = 0; i < 3; i++) await a.count(store, 'k', W, WINDOW_MS, 1, 1000);
    await b.count(store, 'k', W, WINDOW_MS, 1, 1000);
    // a spends what it leased before b appeared, then counts one by one; so does b.
    let before = store.requests;
    for (let i = 0; i < 200; i++) await a.count(store, 'k', W, WINDOW_MS, 1, 1000);
    // At most two leases: the one it held when b appeared, and one it took before it saw b.
    expect(store.requests - before).toBeGreaterThanOrEqual(200 - 2 * 64);
    before = store.requests;
    for (let i = 0; i < 50; i++) await b.count(store, 'k', W, WINDOW_MS, 1, 1000);
    expect(store.requests - before).toBe(50);
  });

  it('several instances under concurrency never admit past the limit, and waste little', async () => {
    for (const limit of [10, 64, 257, 1000]) {
      const store = sharedStore();
      const instances = [new WindowLeases(), new WindowLeases(), new WindowLeases()];
      const hits = await Promise.all(
        Array.from({ length: limit * 2 }, (_, i) => instances[i % 3]!.count(store, 'k', W, WINDOW_MS, 1 + (i % 2), limit)),
      );
      const admittedUnits = hits.reduce((sum, r, i) => sum + (r.allowed ? 1 + (i % 2) : 0), 0);
      expect(admittedUnits).toBeLessThanOrEqual(limit);
      // Early refusals are bounded by the leases the instances still hold (one each).
      expect(admittedUnits).toBeGreaterThanOrEqual(limit - 3 * 64);
      await new Promise((resolve) => setImmediate(resolve));
      expect(await store.value(`k:${W}`)).toBeGreaterThanOrEqual(admittedUnits);
    }
  });

  it('one instance under a concurrent burst admits exactly the limit, then refuses', async () => {
    for (const limit of [10, 64, 257, 1000]) {
      const store = sharedStore();
      const leases = new WindowLeases();
      // Warm: the counter has been read, so the burst's hits may lease.
      await leases.count(store, 'k', W, WINDOW_MS, 1, limit);
      const burst = await Promise.all(Array.from({ length: limit * 2 }, () => leases.count(store, 'k', W, WINDOW_MS, 1, limit)));
      const later = await Promise.all(Array.from({ length: 5 }, () => leases.count(store, 'k', W, WINDOW_MS, 1, limit)));
      expect(1 + burst.filter((r) => r.allowed).length + later.filter((r) => r.allowed).length).toBe(limit);
    }
  });

  it('a batch bigger than the lease takes the rest from the store; one that does not fit is refused whole', async () => {
    const store = sharedStore();
    const leases = new WindowLeases();
    expect((await leases.count(store, 'k', W, WINDOW_MS, 3, 4)).allowed).toBe(true);
    expect(await leases.count(store, 'k', W, WINDOW_MS, 2, 4)).toEqual({ allowed: false, used: 5 });
    expect((await leases.count(store, 'k', W, WINDOW_MS, 1, 4)).allowed).toBe(false);
  });

  it('starts over in the next window and remembers a bounded number of counters', async () => {
    const store = sharedStore();
    const leases = new WindowLeases(3);
    for (let i = 0; i < 3; i++) await leases.count(store, 'k', W, WINDOW_MS, 1, 3);
    expect((await leases.count(store, 'k', W, WINDOW_MS, 1, 3)).allowed).toBe(false);
    expect(await leases.count(store, 'k', W + 1, WINDOW_MS, 1, 3)).toEqual({ allowed: true, used: 1 });
    // The past window's counter was forgotten when the new one came.
    expect(leases.size).toBe(1);
    for (const caller of ['a', 'b', 'c', 'd', 'e']) await leases.count(store, caller, W + 1, WINDOW_MS, 1, 3);
    expect(leases.size).toBe(3);
  });
});
