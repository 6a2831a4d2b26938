import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { idKey } from './InFlightIds.js';

/** The Node response a session POST is answered on, as far as holding its start back takes (http.ServerResponse). */
export interface CorkableResponse {
  cork(): void;
  uncork(): void;
  readonly writableEnded: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** How long at most the start of an answer waits for the call's first message. */
export const HOLD_MS = 50;

type Message = { id?: unknown; method?: unknown; result?: unknown; error?: unknown } | null;

/**
 * The starts of one 2025 session's SSE answers, held back until their call sends something
 * (docs/performance.md, "MCP gateway"). The SDK transport's answer to a POST is an event stream
 * whose head @hono/node-server writes at once, then a priming event (the resumability id), then,
 * when the call is done, its result and the stream's end: three socket writes, each a system call
 * that, on loopback, also runs the reader's side of TCP. The answer's Node response is corked
 * until the call's first message: a result ends the response, and Node's end() sends everything
 * in one write; a progress notification, log message or request to the client (sampling,
 * elicitation) releases it once that message is written, so nothing a call sends waits. Only the
 * head and the priming event wait, for at most HOLD_MS, when a call sends nothing for longer.
 */
export class HeldHeads {
  /** The held answers by the ids of the requests they answer (idKey). */
  private readonly held = new Map<string, Hold>();

  /** `maxMs`: how long a start waits at most (tests lengthen it). */
  constructor(private readonly maxMs = HOLD_MS) {}

  /** Requests whose answer is held (or was, until the answer closes). */
  get size(): number {
    return this.held.size;
  }

  /** Hold the start of `res`, the answer to the requests `keys` (idKey), until one of them sends a message. */
  hold(keys: readonly string[], res: CorkableResponse): void {
    if (keys.length === 0 || typeof res.cork !== 'function' || res.writableEnded) return;
    const hold = new Hold(res, keys, this.held, this.maxMs);
    for (const k of keys) this.held.set(k, hold);
  }

  /** Release a held answer when the server sends a message for one of its requests. */
  watch(transport: { send(message: JSONRPCMessage, options?: { relatedRequestId?: unknown }): Promise<void> }): void {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (this.held.size > 0) {
        const m = message as Message;
        const answer = m !== null && typeof m.method !== 'string' && ('result' in m || 'error' in m);
        const hold = this.held.get(idKey(answer ? m.id : options?.relatedRequestId) ?? '');
        // An answer ends the response (end() writes it all at once); anything else goes out once written.
        if (hold) hold.sent(answer);
      }
      return send(message, options);
    };
  }
}

class Hold {
  private released = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly res: CorkableResponse,
    private readonly keys: readonly string[],
    private readonly held: Map<string, Hold>,
    maxMs: number,
  ) {
    res.cork();
    this.timer = setTimeout(this.release, maxMs);
    res.once('close', this.release);
  }

  sent(answer: boolean): void {
    // The answer to the one request: it ends the response, and end() writes everything at once.
    if (answer && this.keys.length === 1) this.forget();
    // Anything else (a batch's first answer among them) goes out once written: the SDK stores it as
    // an event first (a promise), then enqueues it, and the response writes it, all before setImmediate.
    else if (!this.released) setImmediate(this.release);
  }

  private readonly release = (): void => {
    this.forget();
    if (this.released) return;
    this.released = true;
    clearTimeout(this.timer);
    // end() has uncorked already (and the socket may serve the next request by now).
    if (!this.res.writableEnded) this.res.uncork();
  };

  private forget(): void {
    for (const k of this.keys) if (this.held.get(k) === this) this.held.delete(k);
  }
}
