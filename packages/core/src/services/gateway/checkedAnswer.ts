/**
 * The `data.reason` of the JSON-RPC error that stands for an upstream answer that was no JSON-RPC
 * response (checkedAnswer); UpstreamConnection turns it into an error naming the server.
 */
export const INVALID_ANSWER = 'upstream_invalid_result';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What is wrong with a response to a request (`m` has an id and no method), or undefined. */
function problemOf(m: Record<string, unknown>): string | undefined {
  if (m.jsonrpc !== '2.0') return 'it is no JSON-RPC 2.0 message';
  if ('error' in m) {
    const e = m.error;
    return isObject(e) && typeof e.code === 'number' && typeof e.message === 'string' ? undefined : 'its error is no JSON-RPC error';
  }
  if (!('result' in m)) return 'it holds neither a result nor an error';
  const r = m.result;
  if (isObject(r)) return undefined;
  return `its result is ${r === null ? 'null' : Array.isArray(r) ? 'an array' : `a ${typeof r}`}, not an object`;
}

/**
 * An upstream's message as the MCP SDK client may read it. The client drops a response whose
 * result is no object (`"result": null`, a string, an array) or that has neither result nor error,
 * as a message it cannot read (its transport's onerror), so the request waited for its whole
 * timeout: such a response becomes a JSON-RPC error to the same request, with
 * `data.reason` INVALID_ANSWER, and the call fails at once. Everything else is passed as it is (a
 * result object of the wrong shape the client checks itself: SdkError INVALID_RESULT).
 */
export function checkedAnswer(message: unknown): unknown {
  if (!isObject(message) || 'method' in message) return message;
  const id = message.id;
  // Without a usable id it answers no request of ours: nothing waits for it.
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return message;
  const problem = problemOf(message);
  if (!problem) return message;
  return { jsonrpc: '2.0', id, error: { code: -32603, message: problem, data: { reason: INVALID_ANSWER } } };
}

/**
 * What made an answer no result of its method, or undefined for any other error: one the client
 * could not read (checkedAnswer's JSON-RPC error), or one it read and refused (SdkError
 * INVALID_RESULT: an object without the method's fields, such as prompts/get without `messages`).
 */
export function invalidAnswer(err: unknown): string | undefined {
  const e = err as { code?: unknown; data?: { reason?: unknown }; message?: unknown } | null;
  if (e?.data?.reason !== INVALID_ANSWER && e?.code !== 'INVALID_RESULT') return undefined;
  return String(e.message ?? '')
    .replace(/\s+/g, ' ')
    .slice(0, 300);
}

/**
 * What the stdio transport reads messages with (the SDK's ReadBuffer: lines of JSON, bounded by
 * `maxBufferSize`), with each message checked (checkedAnswer) before the SDK's schema sees it.
 */
export class CheckedReadBuffer {
  private buffer: Buffer | undefined;

  constructor(
    private readonly maxBufferSize: number,
    private readonly parse: (value: unknown) => unknown,
  ) {}

  append(chunk: Buffer): void {
    if ((this.buffer?.length ?? 0) + chunk.length > this.maxBufferSize) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBufferSize} bytes`);
    }
    this.buffer = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
  }

  readMessage(): unknown {
    while (this.buffer) {
      const index = this.buffer.indexOf('\n');
      if (index === -1) return null;
      const line = this.buffer.toString('utf8', 0, index).replace(/\r$/, '');
      this.buffer = this.buffer.subarray(index + 1);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        // A line that is no JSON (a server's stray log output): skipped, as the SDK does.
        continue;
      }
      return this.parse(checkedAnswer(value));
    }
    return null;
  }

  clear(): void {
    this.buffer = undefined;
  }
}

/**
 * Have the SDK's stdio transport read through a CheckedReadBuffer. The transport has no option for
 * it: its buffer field is replaced, when it is there as the SDK 2.x has it (the gateway's e2e
 * tests of malformed answers fail if it no longer is).
 */
export function checkStdioAnswers(transport: object, maxBufferSize: number, parse: (value: unknown) => unknown): void {
  const t = transport as { _readBuffer?: { readMessage?: unknown } };
  if (typeof t._readBuffer?.readMessage === 'function')
    (t as { _readBuffer: unknown })._readBuffer = new CheckedReadBuffer(maxBufferSize, parse);
}
