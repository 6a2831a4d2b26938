import { describe, expect, it } from 'vitest';
import { waitFor } from './waitFor.js';

describe('waitFor', () => {
  it('resolves with the first truthy value, as soon as it holds', async () => {
    let n = 0;
    const t0 = performance.now();
    expect(await waitFor(() => (++n >= 3 ? { n } : undefined), { intervalMs: 5 })).toEqual({ n: 3 });
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('awaits async checks and retries one that throws', async () => {
    let n = 0;
    expect(
      await waitFor(
        async () => {
          if (++n < 3) throw new Error('not yet');
          return 'ok';
        },
        { intervalMs: 1 },
      ),
    ).toBe('ok');
  });

  it('rejects after the timeout, naming the condition and what it saw last', async () => {
    await expect(waitFor(() => 0, { timeoutMs: 60, intervalMs: 10, what: 'counter reached' })).rejects.toThrow(
      /counter reached did not hold within 60 ms \(last value: 0\)/,
    );
    await expect(waitFor(() => Promise.reject(new Error('refused')), { timeoutMs: 30 })).rejects.toThrow(/last error: refused/);
  });
});
