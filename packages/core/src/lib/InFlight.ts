/**
 * Promises still running, for a stop to wait on: each is tracked from `track` until it ends,
 * fulfilled or rejected. The owners whose close must let work finish before the store closes keep
 * one: UserDirectory (profile writes), BillingService (settles) and McpTasks (task runs).
 */
export class InFlight {
  private readonly running = new Set<Promise<unknown>>();

  /** How many tracked promises have not ended yet. */
  get size(): number {
    return this.running.size;
  }

  /** Tracks `p` until it ends and returns it (its rejection is still the caller's to handle). */
  track<T>(p: Promise<T>): Promise<T> {
    this.running.add(p);
    const done = () => void this.running.delete(p);
    p.then(done, done);
    return p;
  }

  /**
   * Resolves once every promise tracked so far has ended, and every one tracked while it waits (a
   * settle that ends may start another write); never rejects. With `timeoutMs` it resolves after
   * that long at the latest, whatever is still running.
   */
  async settled(timeoutMs?: number): Promise<void> {
    if (timeoutMs === undefined) {
      while (this.running.size > 0) await Promise.allSettled([...this.running]);
      return;
    }
    if (this.running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([this.settled(), expired]);
    } finally {
      clearTimeout(timer);
    }
  }
}
