import type { ForwardedRequest } from './sendPassThrough.js';
import { sendPassThrough, unreadableAnswer } from './sendPassThrough.js';
import { readWireAnswer, type WireAnswerSummary } from './readWireAnswer.js';
import type { PassThroughEndpoint } from './wireRequest.js';

/** A non-streamed pass-through answer: its bytes for the caller, and what the engine reads of it. */
export interface WireAnswer {
  body: Uint8Array;
  contentType: string;
  summary: WireAnswerSummary;
}

/**
 * One non-streamed pass-through attempt: the request, the whole answer read, then parsed once
 * for its usage (and text and tool calls, for the procedure's result and the cache). A body that
 * breaks off is `connection_lost` and one that is not JSON `malformed_response`, as on the SDK path.
 */
export async function fetchWireAnswer(e: PassThroughEndpoint, f: ForwardedRequest, signal: AbortSignal): Promise<WireAnswer> {
  const res = await sendPassThrough(e, f, signal);
  let body: Uint8Array;
  try {
    body = new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    if (signal.aborted) throw err;
    // Past the client's size cap (upstreamFetch's MAX_ANSWER_BYTES) the answer is not one to read.
    const tooLarge = (err as { code?: unknown } | null)?.code === 'ERR_ANSWER_TOO_LARGE';
    throw await unreadableAnswer(e, res.status, err, tooLarge ? 'malformed' : 'lost');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (err) {
    throw await unreadableAnswer(e, res.status, err, 'malformed');
  }
  return { body, contentType: res.headers.get('content-type') ?? 'application/json', summary: readWireAnswer(e.format, parsed) };
}
