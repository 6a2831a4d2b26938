export interface WaitForOptions {
  /** Give up after this long, in ms. Default 10000. */
  timeoutMs?: number;
  /** Pause between two checks, in ms. Default 25. */
  intervalMs?: number;
  /** Named in the timeout error, so a failure says which condition never held. */
  what?: string;
}

/** `T` without its falsy members, so `waitFor(() => ready && value)` resolves to the value's type. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Resolve with the first truthy value `check` returns (it may be async), checking again every
 * `intervalMs`; reject after `timeoutMs` with the last value seen (or the last error thrown).
 * Tests await a condition with this instead of sleeping for a guessed time: a fast machine goes
 * on at once, a slow one gets the whole timeout, and a condition that never holds fails the test.
 */
export async function waitFor<T>(check: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 10_000, intervalMs = 25, what = 'condition' } = opts;
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      last = await check();
      lastError = undefined;
      if (last) return last as Truthy<T>;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const seen =
        lastError !== undefined
          ? `last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`
          : `last value: ${safeString(last)}`;
      throw new Error(
        `waitFor: ${what} did not hold within ${timeoutMs} ms (${seen})`,
        lastError !== undefined ? { cause: lastError } : undefined,
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - performance.now()))));
  }
}

function safeString(v: unknown): string {
  try {
    return typeof v === 'string' ? JSON.stringify(v) : String(JSON.stringify(v) ?? v);
  } catch {
    return String(v);
  }
}
