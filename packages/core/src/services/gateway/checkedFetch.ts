import { checkedAnswer } from './checkedAnswer.js';

/**
 * The fetch the MCP SDK client reaches an HTTP upstream with, with each JSON-RPC message of its
 * answers checked (checkedAnswer) before the SDK's schema sees it. The SDK drops a message it
 * cannot read from an SSE stream (the request then waits for its timeout) and fails a JSON
 * answer with its schema's error dump; checked, such an answer is a JSON-RPC error to its
 * request, which the gateway reports naming the server.
 */
export function checkedFetch(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const head = { status: res.status, statusText: res.statusText, headers: res.headers };
    if (type === 'text/event-stream') return new Response(res.body.pipeThrough(checkedEvents()), head);
    if (type === 'application/json') return new CheckedJsonResponse(res.body, head);
    return res;
  };
}

/** A JSON answer whose json() (what the SDK reads it with) gives its messages checked: no second parse. */
class CheckedJsonResponse extends Response {
  override async json(): Promise<unknown> {
    const data: unknown = await super.json();
    return Array.isArray(data) ? data.map(checkedAnswer) : checkedAnswer(data);
  }
}

/** An SSE stream with the data of each `message` event checked; events that pass are passed as they came. */
function checkedEvents(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = '';
  /** Where the search for an event's end resumes in `buffer`. */
  let scanned = 0;
  const events = (controller: TransformStreamDefaultController<Uint8Array>, end: boolean) => {
    let out = '';
    let from = 0;
    // Searched from just before the new text: a long event that comes in many chunks is not scanned again whole each time.
    EVENT_END.lastIndex = scanned;
    for (let m = EVENT_END.exec(buffer); m; m = EVENT_END.exec(buffer)) {
      out += checkedEvent(buffer.slice(from, m.index)) + m[0];
      from = EVENT_END.lastIndex;
    }
    buffer = buffer.slice(from);
    if (end && buffer) {
      out += checkedEvent(buffer);
      buffer = '';
    }
    scanned = Math.max(0, buffer.length - 3);
    if (out) controller.enqueue(encoder.encode(out));
  };
  return new TransformStream({
    transform(chunk, controller) {
      buffer += decoder.decode(chunk, { stream: true });
      events(controller, false);
    },
    flush(controller) {
      buffer += decoder.decode();
      events(controller, true);
    },
  });
}

/** The blank line that ends an SSE event (its line ends may be CRLF, LF or CR). */
const EVENT_END = /(?:\r\n|\n|\r)(?:\r\n|\n|\r)/g;

/** One event's text (without its blank line), its data replaced when checkedAnswer replaced its message. */
function checkedEvent(event: string): string {
  const lines = event.split(/\r\n|\n|\r/);
  let data: string | undefined;
  for (const line of lines) {
    const field = line.startsWith('data:') ? 'data' : line.startsWith('event:') ? 'event' : undefined;
    const value = field && line.slice(field.length + (line[field.length + 1] === ' ' ? 2 : 1));
    if (field === 'event' && value !== 'message') return event;
    if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
  }
  if (!data) return event;
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return event;
  }
  const checked = checkedAnswer(message);
  if (checked === message) return event;
  // The event's other fields (its id: a resumption point) are kept; only its data is the checked message.
  return [...lines.filter((l) => !l.startsWith('data:')), `data: ${JSON.stringify(checked)}`].join('\n');
}
