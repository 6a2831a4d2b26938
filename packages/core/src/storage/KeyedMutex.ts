/**
 * In-process exclusive locks on string keys. A holder of several keys takes them in the order
 * given (callers pass them sorted), so two holders can never wait on each other in a cycle.
 *
 * Why: an optimistic SQL transaction on a hot key (one user's account, 50 calls in flight) loses
 * its race to the other 49 of the same process again and again. Queuing the same process's
 * transactions per key turns those lost races into a short wait; races between processes are
 * still caught by the transaction's own check.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Wait for every key in turn; returns the function that releases them all. */
  async lock(keys: readonly string[]): Promise<() => void> {
    const releases: Array<() => void> = [];
    for (const key of keys) {
      const prev = this.tails.get(key);
      let release!: () => void;
      const mine = new Promise<void>((r) => (release = r));
      const tail = prev ? prev.then(() => mine) : mine;
      this.tails.set(key, tail);
      releases.push(() => {
        release();
        // The last waiter clears its key, so the map holds only keys in use.
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
      if (prev) await prev;
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      for (const r of releases) r();
    };
  }

  /** Keys with a holder or waiters (for tests). */
  get size(): number {
    return this.tails.size;
  }
}
