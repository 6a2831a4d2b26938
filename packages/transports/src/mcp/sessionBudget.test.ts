import { describe, expect, it } from 'vitest';
import { SessionBudget } from './sessionBudget.js';
import type { SessionCounts } from './clusterSessionCounts.js';

const budgets = {
  sessionsPerAddress: 2,
  sessionsPerIdentity: 3,
  maxAnonymousSessions: 4,
  uninitializedTtlMs: 10_000,
  anonymousIdleMs: 60_000,
};
const make = (over: Partial<typeof budgets> = {}, maxSessions = 10, elsewhere?: () => SessionCounts | undefined) =>
  new SessionBudget({ ...budgets, ...over } as never, maxSessions, elsewhere);

describe('SessionBudget', () => {
  it('anonymous sessions: per address (429), then the anonymous ceiling (503)', () => {
    const b = make();
    for (const ip of ['a', 'a']) {
      expect(b.admit(ip, null, 0)).toBeNull();
      b.add({ ip, owner: null });
    }
    expect(b.admit('a', null, 2)).toEqual({
      status: 429,
      message: 'too many sessions from this address (2); close some or retry later',
      retryAfterSec: 30,
    });
    b.add({ ip: 'b', owner: null });
    b.add({ ip: 'c', owner: null });
    expect(b.admit('d', null, 4)).toMatchObject({ status: 503, message: 'too many anonymous sessions; sign in or retry later' });
    // Signed-in clients keep the rest of maxSessions, even from a flooded address.
    expect(b.admit('a', 'alice', 4)).toBeNull();
  });

  it('signed-in sessions: per identity (429) and the overall cap (503)', () => {
    const b = make({}, 5);
    for (let i = 0; i < 3; i++) b.add({ ip: 'a', owner: 'alice' });
    expect(b.admit('z', 'alice', 3)?.status).toBe(429);
    expect(b.admit('z', 'bob', 3)).toBeNull();
    expect(b.admit('z', 'bob', 5)).toEqual({ status: 503, message: 'too many sessions', retryAfterSec: 30 });
  });

  it('remove and claimed move the counts; own() is what other instances see', () => {
    const b = make();
    b.add({ ip: 'a', owner: null });
    b.add({ ip: 'a', owner: null });
    b.claimed('a', 'alice');
    expect(b.own()).toEqual({ total: 2, anonymous: 1, byAddress: { a: 1 }, byIdentity: { alice: 1 } });
    expect(b.admit('a', null, 2)).toBeNull();
    b.remove({ ip: 'a', owner: null });
    b.remove({ ip: 'a', owner: 'alice' });
    expect(b.own()).toEqual({ total: 0, anonymous: 0, byAddress: {}, byIdentity: {} });
    expect(b.counts).toEqual({ anonymous: 0, addresses: 0, identities: 0 });
  });

  it("adds other instances' sessions: the budget is the cluster's", () => {
    const other: SessionCounts = { total: 9, anonymous: 1, byAddress: { a: 1 }, byIdentity: { alice: 3 } };
    const b = make({}, 10, () => other);
    b.add({ ip: 'a', owner: null });
    expect(b.admit('a', null, 1)?.status).toBe(429);
    expect(b.admit('x', 'alice', 1)?.status).toBe(429);
    expect(b.admit('x', 'bob', 1)).toEqual({ status: 503, message: 'too many sessions', retryAfterSec: 30 });
  });

  it('tells every change', () => {
    let changes = 0;
    const b = new SessionBudget(budgets as never, 10, undefined, () => changes++);
    b.add({ ip: 'a', owner: null });
    b.claimed('a', 'x');
    b.remove({ ip: 'a', owner: 'x' });
    expect(changes).toBe(3);
  });

  it('expires sessions that never initialize in time, and anonymous idle ones; not signed-in idle ones', () => {
    const b = make();
    const s = { ip: 'a', owner: null, initialized: false, createdAt: 0, lastSeen: 0 };
    expect(b.expired(s, 10_000)).toBe(false);
    expect(b.expired(s, 10_001)).toBe(true);
    expect(b.expired({ ...s, initialized: true }, 10_001)).toBe(false);
    expect(b.expired({ ...s, initialized: true }, 60_001)).toBe(true);
    expect(b.expired({ ...s, initialized: true, owner: 'alice' }, 10_000_000)).toBe(false);
  });

  it('sweeps a quarter of the shortest lifetime, between 250 ms and 15 s', () => {
    expect(make().sweepEveryMs).toBe(2500);
    expect(make({ uninitializedTtlMs: 100 }).sweepEveryMs).toBe(250);
    expect(make({ uninitializedTtlMs: 10_000_000, anonymousIdleMs: 10_000_000 }).sweepEveryMs).toBe(15_000);
  });
});
