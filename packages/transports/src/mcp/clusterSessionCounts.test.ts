import { MemoryStorage } from '@ai-backend/core/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterSessionCounts, type SessionCounts } from './clusterSessionCounts.js';

/** A real memory store that counts its key listings (a walk of the whole keyspace on Redis). */
class ListingCountingStorage extends MemoryStorage {
  listings = 0;
  override keys(prefix: string): Promise<string[]> {
    this.listings++;
    return super.keys(prefix);
  }
}

const counts = (total: number, who: string): SessionCounts => ({ total, anonymous: 0, byAddress: {}, byIdentity: { [who]: total } });

const running: ClusterSessionCounts[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

describe('ClusterSessionCounts', () => {
  it("instances see each other's counts through the member list, without listing keys; a stopped one stops counting", async () => {
    const store = new ListingCountingStorage();
    // A store that holds much else (ledgers, usage rows): a listing would walk all of it.
    for (let i = 0; i < 1000; i++) await store.set(`ledger:acct:user-${i}`, { one_time: i });
    const a = new ClusterSessionCounts(store, () => counts(2, 'ann'));
    const b = new ClusterSessionCounts(store, () => counts(3, 'bob'));
    const c = new ClusterSessionCounts(store, () => counts(5, 'cy'));
    running.push(a, b, c);
    await Promise.all([a.ready, b.ready, c.ready]);
    for (let beat = 0; beat < 5; beat++) await Promise.all([a.sync(), b.sync(), c.sync()]);

    expect(a.elsewhere.total).toBe(8);
    expect(b.elsewhere.byIdentity).toEqual({ ann: 2, cy: 5 });
    expect(store.listings).toBe(0);

    await c.stop();
    running.splice(running.indexOf(c), 1);
    await Promise.all([a.sync(), b.sync()]);
    expect(a.elsewhere.total).toBe(3);
    expect(b.elsewhere.total).toBe(2);
    expect(store.listings).toBe(0);
  });
});
