import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import type { Identity } from '../../kernel/identity.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { UserDirectory } from './UserDirectory.js';

const who = (sub: string, email?: string): Identity => ({ sub, scopes: [], isAdmin: false, via: 'jwt', ...(email ? { email } : {}) });

/** A store whose log appends wait until `open()` (or fail with `fail()`): the last write of `seen`. */
class GatedStorage extends MemoryStorage {
  private gate = gate();
  appends = 0;
  override async append<T>(log: string, record: T): Promise<number> {
    await this.gate.promise;
    this.appends++;
    return super.append(log, record);
  }
  open(): void {
    this.gate.resolve();
    this.gate = { ...gate(), promise: Promise.resolve() };
  }
  /** Appends fail until `open()`. */
  fail(): void {
    this.gate.reject(new Error('store unreachable'));
  }
}

// Promise.withResolvers is not in Node 20, which CI still runs.
function gate(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

describe('UserDirectory.settled', () => {
  it('waits for every profile write started, so a shutdown does not cut one off', async () => {
    const storage = new GatedStorage();
    const dir = new UserDirectory(storage, resolveConfig({}));
    dir.seen(who('u1', 'u1@example.com'));
    dir.seen(who('u2'));
    let done = false;
    const settled = dir.settled().then(() => {
      done = true;
    });
    // A deliberate pause: time for settled() to resolve too early (asserting it does not).
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    storage.open();
    await settled;
    expect(storage.appends).toBe(2);
    expect((await storage.readLog('user:directory')).map((e) => (e.record as { sub: string }).sub).sort()).toEqual(['u1', 'u2']);
    // Nothing running: resolves at once.
    await expect(dir.settled()).resolves.toBeUndefined();
  });

  it('resolves when a write fails, and the next sighting writes again', async () => {
    const storage = new GatedStorage();
    const dir = new UserDirectory(storage, resolveConfig({}));
    dir.seen(who('u3', 'u3@example.com'));
    const settled = dir.settled();
    storage.fail();
    await expect(settled).resolves.toBeUndefined();
    expect(storage.appends).toBe(0);
    // The failed write forgot the user and gave its index marker back, so the same identity is
    // written again (not skipped as recent, nor as already indexed).
    storage.open();
    dir.seen(who('u3', 'u3@example.com'));
    await dir.settled();
    expect(await storage.readLog('user:directory')).toHaveLength(1);
  });
});

/** A store whose profile writes each wait for the test to let them through, in any order. */
class HeldProfileWrites extends MemoryStorage {
  readonly held: Array<{ value: unknown; release: () => void; fail: () => void }> = [];
  override async set<T>(key: string, value: T, opts?: { ttlMs?: number }): Promise<void> {
    if (key.startsWith('user:profile:')) {
      const g = gate();
      this.held.push({ value, release: g.resolve, fail: () => g.reject(new Error('store unreachable')) });
      await g.promise;
    }
    return super.set(key, value, opts);
  }
}

describe("UserDirectory.seen: one user's writes in order", () => {
  it('a newer sighting lands after an older one that is still being written, never under it', async () => {
    const storage = new HeldProfileWrites();
    const dir = new UserDirectory(storage, resolveConfig({}));
    const verified: Identity = { ...who('u4', 'u4@example.com'), emailVerified: true };
    dir.seen(verified);
    // Her issuer no longer vouches for the address: a newer profile, while the first is still on its way.
    dir.seen({ ...verified, emailVerified: false });
    // Only the first write has started; the second waits for it.
    await new Promise((r) => setImmediate(r));
    expect(storage.held).toHaveLength(1);
    storage.held[0]!.release();
    await waitForHeld(storage, 2);
    expect((storage.held[1]!.value as { emailVerified?: boolean }).emailVerified).toBeUndefined();
    storage.held[1]!.release();
    await dir.settled();
    expect((await dir.find('u4')).profile?.emailVerified).toBeUndefined();
    // Another user's write does not wait for u4's.
    dir.seen(who('u5'));
    await waitForHeld(storage, 3);
    storage.held[2]!.release();
    await dir.settled();
    expect((await dir.find('u5')).profile?.sub).toBe('u5');
  });

  it('sightings made while a write runs: only the newest is written after it', async () => {
    const storage = new HeldProfileWrites();
    const dir = new UserDirectory(storage, resolveConfig({}));
    const base = who('u7', 'u7@example.com');
    dir.seen(base);
    for (const scopes of [['a'], ['b'], ['c']]) dir.seen({ ...base, scopes });
    await waitForHeld(storage, 1);
    storage.held[0]!.release();
    await waitForHeld(storage, 2);
    expect((storage.held[1]!.value as { scopes: string[] }).scopes).toEqual(['c']);
    storage.held[1]!.release();
    await dir.settled();
    expect(storage.held).toHaveLength(2);
    expect((await dir.find('u7')).profile?.scopes).toEqual(['c']);
  });

  it("an older write's failure does not make the newer sighting, written since, count as unwritten", async () => {
    const storage = new HeldProfileWrites();
    const dir = new UserDirectory(storage, resolveConfig({}));
    const before = who('u6', 'u6@example.com');
    const after: Identity = { ...before, isAdmin: true };
    dir.seen(before);
    dir.seen(after);
    await waitForHeld(storage, 1);
    storage.held[0]!.fail();
    await waitForHeld(storage, 2);
    storage.held[1]!.release();
    await dir.settled();
    expect((await dir.find('u6')).profile?.isAdmin).toBe(true);
    // The newer profile is stored and marked: seeing her again as she is writes nothing.
    dir.seen(after);
    await new Promise((r) => setImmediate(r));
    expect(storage.held).toHaveLength(2);
  });
});

async function waitForHeld(storage: HeldProfileWrites, n: number): Promise<void> {
  for (let i = 0; i < 100 && storage.held.length < n; i++) await new Promise((r) => setImmediate(r));
  expect(storage.held).toHaveLength(n);
}
