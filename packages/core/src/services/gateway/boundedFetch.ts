import { CoreError } from '../../kernel/CoreError.js';

/** Bytes of SSE framing and JSON-RPC envelope allowed past the limit (as postToolCall allows). */
const SLACK = 65_536;
const LF = 0x0a;
const CR = 0x0d;
/** Ends a cut event as one of a type no MCP client reads (a cut `data:` line lands in it, never in a `message`). */
const DISCARD = new TextEncoder().encode('\nevent: gateway-discarded\n\n');

const tooLarge = (maxBytes: number) =>
  new CoreError('PAYLOAD_TOO_LARGE', `more than gateway.maxResultBytes (${maxBytes})`, {
    details: { reason: 'upstream_result_too_large' },
  });

/**
 * The fetch the MCP SDK client reaches an upstream with, with its answers bounded while they are
 * read (`gateway.maxResultBytes`, plus room for the envelope): without it, the SDK buffers a whole
 * answer (resources/read, prompts/get, lists, and tools/call over legacy SSE and 2026-07-28) and
 * only then does the gateway measure it, so an endless or huge answer fills memory until the
 * call's timeout.
 *
 * - A JSON (or any non-SSE) body: past the limit the read fails with PAYLOAD_TOO_LARGE (the
 *   SDK's request rejects with it) and the body is cancelled.
 * - An SSE stream: each event is bounded, not the stream (a session's GET stream lives for hours).
 *   An event past the limit is cut: it is ended as an event of a type clients ignore, and the rest
 *   of it is dropped. On a POST's stream (one request), the request is then answered with a
 *   JSON-RPC error saying why and the stream ends, so the call fails at once instead of at its
 *   timeout; on a GET stream the stream goes on with the next event.
 */
export function boundedFetch(base: typeof fetch, maxBytes: number): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    const limit = maxBytes + SLACK;
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const body =
      type === 'text/event-stream' ? boundedEvents(res.body, limit, maxBytes, requestIdOf(init)) : boundedBody(res.body, limit, maxBytes);
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** The id of the one JSON-RPC request a POST carries, or undefined (a GET, a notification, a batch). */
function requestIdOf(init: RequestInit | undefined): string | number | undefined {
  if (typeof init?.body !== 'string') return undefined;
  try {
    const m = JSON.parse(init.body) as { id?: unknown; method?: unknown };
    return typeof m?.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? m.id : undefined;
  } catch {
    return undefined;
  }
}

function boundedBody(source: ReadableStream<Uint8Array>, limit: number, maxBytes: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      size += value.byteLength;
      if (size > limit) {
        controller.error(tooLarge(maxBytes));
        await reader.cancel().catch(() => undefined);
        return;
      }
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

function boundedEvents(
  source: ReadableStream<Uint8Array>,
  limit: number,
  maxBytes: number,
  requestId: string | number | undefined,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCR = false;
  /** Dropping the rest of a cut event, up to its blank line. */
  let skipping = false;
  /** The cut event ended with a CR: an LF right after it belongs to it. */
  let resumedAtCR = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A pull must enqueue something (or end): chunks wholly inside a cut event are read past here.
      for (;;) {
        if (await step(controller)) return;
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });

  /** Read one chunk and pass what is not cut; true when something was enqueued or the stream ended. */
  async function step(controller: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> {
    const { value, done } = await reader.read();
    if (done) {
      controller.close();
      return true;
    }
    let from = 0;
    let passed = false;
    for (let i = 0; i < value.length; i++) {
      const b = value[i]!;
      if (b === LF && afterCR) {
        afterCR = false;
        // The LF of the CRLF that ended a cut event is dropped with it.
        if (resumedAtCR) from = i + 1;
        resumedAtCR = false;
        continue;
      }
      afterCR = b === CR;
      resumedAtCR = false;
      if (b === LF || b === CR) {
        if (lineBytes === 0) {
          // A blank line: the event ends. A cut one resumes passing after it.
          eventBytes = 0;
          if (skipping) {
            skipping = false;
            from = i + 1;
            resumedAtCR = b === CR;
          }
        }
        lineBytes = 0;
        continue;
      }
      lineBytes++;
      if (skipping || ++eventBytes <= limit) continue;
      controller.enqueue(value.subarray(from, i));
      controller.enqueue(DISCARD);
      passed = true;
      if (requestId !== undefined) {
        const error = { code: -32603, message: tooLarge(maxBytes).message, data: { reason: 'upstream_result_too_large' } };
        controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify({ jsonrpc: '2.0', id: requestId, error })}\n\n`));
        controller.close();
        await reader.cancel().catch(() => undefined);
        return true;
      }
      skipping = true;
    }
    if (!skipping && from < value.length) {
      controller.enqueue(from === 0 ? value : value.subarray(from));
      passed = true;
    }
    return passed;
  }
}
