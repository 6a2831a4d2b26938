export interface WaitForOptions {
  /** Give up after this long, in ms. Default 10000. */
  timeoutMs?: number;
  /** Time between checks, in ms. Default 25. */
  intervalMs?: number;
  /** Said in the error when the deadline passes. */
  what?: string;
}

/**
 * Poll `cond` until it returns true (or a truthy value, which is returned), failing after a
 * deadline: tests wait for a state, never for a fixed time. A `cond` that throws is retried
 * until the deadline; its last error is kept as the failure's cause.
 */
export async function waitFor<T>(cond: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 25, what = 'condition' } = opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`waitFor: ${what} not reached within ${timeoutMs} ms`, lastError ? { cause: lastError } : undefined);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
