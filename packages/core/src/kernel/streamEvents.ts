/**
 * The event contract of a streamed procedure: one whose result is an async iterable (an
 * `async function*` or a ReadableStream) of events `{ type, ... }`. The pipeline reads two kinds
 * while a stream passes, whoever produced it: `text` deltas (MCP progress) and the one `finish`
 * event, whose `result` is the call's answer (what /rpc and MCP return for the stream, and what
 * the statistics read the token count from). Any other event passes through untouched. The AI
 * service's `StreamEvent` (services/ai/runStreamText.ts) is built from these two, so the producer
 * and the readers cannot drift apart.
 */

/** A piece of the answer's text, in order. */
export interface TextEvent {
  type: 'text';
  delta: string;
}

/** The stream's last event: the whole answer, as the non-streamed procedure would return it. */
export interface FinishEvent<R = unknown> {
  type: 'finish';
  result: R;
}

/** Does a procedure's result stream? */
export function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

export function isTextEvent(ev: unknown): ev is TextEvent {
  return (
    typeof ev === 'object' &&
    ev !== null &&
    (ev as { type?: unknown }).type === 'text' &&
    typeof (ev as { delta?: unknown }).delta === 'string'
  );
}

export function isFinishEvent(ev: unknown): ev is FinishEvent {
  return typeof ev === 'object' && ev !== null && (ev as { type?: unknown }).type === 'finish';
}
