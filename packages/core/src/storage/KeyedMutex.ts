import { CoreError } from '../kernel/CoreError.js';

/**
 * In-process exclusive locks on string keys. A holder of several keys takes them in the order
 * given (callers pass them sorted), so two holders can never wait on each other in a cycle.
 *
 * Why: an optimistic SQL transaction on a hot key (one user's account, 50 calls in flight) loses
 * its race to the other 49 of the same process again and again. Queuing the same process's
 * transactions per key turns those lost races into a short wait; races between processes are
 * still caught by the transaction's own check.
 *
 * A holder that failed because the store is unreachable releases with that failure: every
 * transaction queued behind it on its keys fails with it at once, instead of each waiting for the
 * one before to reach its own timeout (ten calls of one user on a hung PostgreSQL had answered
 * 0.8, 1.6 … 8 s late, one query timeout more each). One that arrives after the release runs.
 */
export class KeyedMutex {
  /** Per key, the turn of its last holder or waiter: it resolves with the failure that turn released with, else undefined. */
  private readonly tails = new Map<string, Promise<unknown>>();

  /**
   * Wait for every key in turn; returns the function that releases them all. Rejects with a
   * holder's failure when one ahead of it on a key released with one (the keys this waiter had
   * already taken are released, without a failure).
   */
  async lock(keys: readonly string[]): Promise<(failure?: unknown) => void> {
    const releases: Array<(failure: unknown) => void> = [];
    const releaseAll = (failure?: unknown) => {
      for (const r of releases) r(failure);
    };
    for (const key of keys) {
      const prev = this.tails.get(key);
      let release!: (failure: unknown) => void;
      const mine = new Promise<unknown>((r) => (release = r));
      const tail = prev ? prev.then(() => mine) : mine;
      this.tails.set(key, tail);
      releases.push((failure) => {
        release(failure);
        // The last waiter clears its key, so the map holds only keys in use.
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
      if (prev) {
        const failure = await prev;
        if (failure !== undefined) {
          // Passed on down this key's queue; the keys taken before it are released as they are.
          releases.pop()!(failure);
          releaseAll();
          throw failure;
        }
      }
    }
    let done = false;
    return (failure?: unknown) => {
      if (done) return;
      done = true;
      releaseAll(failure);
    };
  }

  /** Keys with a holder or waiters (for tests). */
  get size(): number {
    return this.tails.size;
  }
}

/**
 * The failure a store's holder releases its keys with (KeyedMutex.lock): an UNAVAILABLE error (the
 * store unreachable or hung, or the keys held elsewhere past the wait), which the transactions
 * queued behind it would meet too; any other error is the holder's own and fails nobody else.
 */
export function unavailableFailure(err: unknown): CoreError | undefined {
  return err instanceof CoreError && err.appCode === 'UNAVAILABLE' ? err : undefined;
}
