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
