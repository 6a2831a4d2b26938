/** A clock for a server whose rate limits count in fixed windows aligned to the clock (`windowMs`). */
export interface WindowClock {
  /** The time, in ms since the epoch: the wall clock moved forward by the current shift. */
  now: () => number;
  /**
   * Jump forward to the beginning of the next window (plus `intoMs`), so that the calls that follow
   * share one window for almost `windowMs`, without waiting for the wall clock to get there. Only
   * ever forward: a window a test already counted in is never read again.
   */
  startWindow(): void;
}

/**
 * Pass `clock.now` where a server or limiter takes a clock (createServer's `clock` option), then
 * call `startWindow()` before a test that must stay inside one window. Starts at a window's
 * beginning already.
 */
export function windowClock(windowMs = 60_000, intoMs = 100): WindowClock {
  let shift = 0;
  const now = () => Date.now() + shift;
  const startWindow = () => {
    const t = now();
    shift += windowMs - (t % windowMs) + intoMs;
  };
  startWindow();
  return { now, startWindow };
}
