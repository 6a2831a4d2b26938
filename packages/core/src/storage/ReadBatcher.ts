interface Waiter {
  resolve(text: string | undefined): void;
  reject(err: unknown): void;
}

/**
 * Coalesces single-key reads issued in the same tick into one multi-key read (one round trip).
 *
 * Why: services read what they need independently and in parallel (a metered call reads the
 * account, the preferences and the vault entry through three services at once). On a networked
 * store each read was its own round trip: its own socket write, its own answer to parse, its own
 * pooled connection. Batching at the store fixes that for every caller, present and future,
 * without making services know about each other's keys. The cost is one `process.nextTick` of
 * latency per read, which is nothing next to a round trip.
 */
export class ReadBatcher {
  private pending: Map<string, Waiter[]> | undefined;

  /** `fetch` answers raw texts in the order of the keys it is given (undefined: absent). */
  constructor(private readonly fetch: (keys: string[]) => Promise<Array<string | undefined>>) {}

  get(key: string): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      if (!this.pending) {
        this.pending = new Map();
        process.nextTick(() => this.flush());
      }
      const waiters = this.pending.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.pending.set(key, [{ resolve, reject }]);
    });
  }

  private flush(): void {
    const batch = this.pending!;
    this.pending = undefined;
    const keys = [...batch.keys()];
    let answer: Promise<Array<string | undefined>>;
    try {
      answer = this.fetch(keys);
    } catch (err) {
      answer = Promise.reject(err);
    }
    answer.then(
      (texts) => keys.forEach((k, i) => batch.get(k)!.forEach((w) => w.resolve(texts[i]))),
      (err: unknown) => batch.forEach((ws) => ws.forEach((w) => w.reject(err))),
    );
  }
}
