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
    body = await readAtMost(res, MAX_ANSWER_BYTES);
  } catch (err) {
    if (signal.aborted) throw err;
    throw await unreadableAnswer(e, res.status, err, err instanceof AnswerTooLarge ? 'malformed' : 'lost');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (err) {
    throw await unreadableAnswer(e, res.status, err, 'malformed');
  }
  return { body, contentType: res.headers.get('content-type') ?? 'application/json', summary: readWireAnswer(e.format, parsed) };
}

/**
 * The largest non-streamed answer read: 64 MiB, far above any model's output (128 K tokens of JSON
 * are a few MB), so a broken or hostile upstream cannot make the server buffer without bound.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export class AnswerTooLarge extends Error {}

/** The whole body, or AnswerTooLarge once it passes `max` bytes (the rest is not read). */
export async function readAtMost(res: Response, max: number): Promise<Uint8Array> {
  const tooLarge = () => new AnswerTooLarge(`the answer is larger than ${max} bytes`);
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  // A declared length is held to by the HTTP client (a longer body is an error): read it whole.
  if (declared <= max) return new Uint8Array(await res.arrayBuffer());
  if (declared > max) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!res.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop by a throw cancels the body.
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw tooLarge();
    chunks.push(chunk);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
