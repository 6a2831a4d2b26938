import { isEventStream, withEnd, type ClosableResponse } from '../edge/StreamAdmission.js';

export type { ClosableResponse };

/**
 * Counts open server-sent-event streams of /mcp (the ai_backend_mcp_streams gauge) and POST
 * answers not yet written (graceful stop drains them). A response whose body is an event stream
 * counts until the body ends, fails or the client cancels it; any other answer ends at once.
 *
 * On the Node adapter the end of a response is its `'close'` event, so the answer is passed on
 * untouched (no second stream, no per-request closure: the listeners are shared). Elsewhere
 * (in-process `fetch`) the body is wrapped to see its end.
 */
export class StreamCounter {
  private open = 0;
  private posts = 0;
  private idle: Array<() => void> = [];

  /** Open SSE streams. */
  get count(): number {
    return this.open;
  }

  /** POST answers not written yet. */
  get inFlight(): number {
    return this.posts;
  }

  /** A POST is being served: it counts until `track(res, 'post', …)` sees its answer end, or `postEnded()` (it threw). */
  postStarted(): void {
    this.posts++;
  }

  /** A POST is over: its answer was written, or it threw before it had one. */
  readonly postEnded = (): void => {
    if (--this.posts === 0 && this.idle.length > 0) for (const resolve of this.idle.splice(0)) resolve();
  };

  private readonly streamEnded = (): void => {
    this.open--;
  };

  private readonly postStreamEnded = (): void => {
    this.open--;
    this.postEnded();
  };

  /** Resolves when no POST is in flight. */
  settled(): Promise<void> {
    if (this.posts === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /**
   * Count `res` until it is over. `kind` 'post' also ends a POST started with `postStarted()`.
   * `outgoing`: the Node response it will be written to, when there is one. `onEnd`: also told
   * once when the answer is over (a session's count of open answers).
   */
  track(
    res: Response,
    kind: 'post' | 'other',
    outgoing?: ClosableResponse,
    onEnd?: () => void,
    /** Whether `res` is an event stream, when the caller knows; else its content type is read. */
    stream = isEventStream(res),
  ): Response {
    // Only the content type is read: reading `res.body` would turn the Node adapter's
    // lightweight Response into a full one (and its body into a transferable stream) for nothing.
    if (!stream) {
      if (kind === 'post') this.postEnded();
      onEnd?.();
      return res;
    }
    const counted = kind === 'post' ? this.postStreamEnded : this.streamEnded;
    const ended = onEnd
      ? () => {
          counted();
          onEnd();
        }
      : counted;
    if (outgoing) {
      this.open++;
      if (outgoing.closed) ended();
      else outgoing.once('close', ended);
      return res;
    }
    if (!res.body) {
      if (kind === 'post') this.postEnded();
      onEnd?.();
      return res;
    }
    this.open++;
    return withEnd(res, ended);
  }
}
