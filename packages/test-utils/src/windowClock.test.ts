import { describe, expect, it } from 'vitest';
import { windowClock } from './windowClock.js';

describe('windowClock', () => {
  it('starts just inside a window and moves with the wall clock', async () => {
    const clock = windowClock(60_000, 100);
    const t = clock.now();
    expect(t % 60_000).toBeGreaterThanOrEqual(100);
    expect(t % 60_000).toBeLessThan(1_000);
    expect(t).toBeGreaterThan(Date.now());
    await new Promise((r) => setTimeout(r, 20)); // let the wall clock move; nothing to await
    expect(clock.now() - t).toBeGreaterThanOrEqual(15);
  });

  it('startWindow jumps forward to the beginning of the next window, never back', () => {
    const clock = windowClock(1_000, 10);
    const first = Math.floor(clock.now() / 1_000);
    clock.startWindow();
    const t = clock.now();
    expect(Math.floor(t / 1_000)).toBe(first + 1);
    expect(t % 1_000).toBeLessThan(500);
    clock.startWindow();
    expect(Math.floor(clock.now() / 1_000)).toBe(first + 2);
  });
});
