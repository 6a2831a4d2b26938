import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { CoreError } from '../../kernel/CoreError.js';
import { decodedBody, type HttpRequester } from '../../net/httpRequest.js';
import type { CallToolResult } from './mcpWire.js';
import { checkedAnswer, INVALID_ANSWER } from './checkedAnswer.js';

/**
 * The open 2025 Streamable HTTP session a forwarded tools/call is posted on (the SDK client opened
 * it). Its URL is parsed and its request headers are built once per session object (`prepared`).
 */
export interface HttpSession {
  url: string;
  /** The connection's headers (shared config headers, or a user's credentials over them). */
  headers: Record<string, string>;
  /** Absent for a server that runs without sessions. */
  sessionId: string | undefined;
  protocolVersion: string;
  /**
   * Node's client below fetch (the connection's guarded or open one): the answer is read from its
   * Node stream, without the WHATWG Response, Headers and web stream a fetch builds around it.
   */
  request: HttpRequester;
}

/** A request the upstream sends back to its client during the call (sampling, elicitation). */
export type ServerRequestHandler = (method: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>;

export interface PostToolCallOptions {
  timeoutMs: number;
  /** Bytes read from the answer before it is refused. */
  maxBytes: number;
  signal?: AbortSignal;
  onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
  /** Where the upstream's server-to-client requests go; without it they are refused with `refusal`. */
  onRequest?: ServerRequestHandler;
}

/** An HTTP error of the upstream, shaped like the SDK client's (status, message) so UpstreamConnection classifies both alike. */
class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    text: string,
  ) {
    super(`Error POSTing to endpoint: ${text.slice(0, 300)}`);
  }
}

/** A JSON-RPC error the upstream answered (its code is a number and its data kept, like the SDK's ProtocolError). */
class UpstreamRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

let nextId = 0;
// Our ids are strings, so they never collide with the SDK client's numeric ids on the same session.
const PREFIX = `gw-${process.pid.toString(36)}-`;

/**
 * tools/call on an open 2025 Streamable HTTP session, sent as our own POST instead of through
 * the SDK client's transport (whose web-stream SSE pipeline cost most of a forwarded call:
 * docs/performance.md, "MCP gateway"). The SDK client still opens the session, lists, receives
 * notifications and reconnects; this only sends the call with the session's headers and reads
 * its answer, JSON or SSE: progress notifications for it go to `onProgress`, requests the
 * upstream sends on the call's stream (sampling, elicitation) go to `onRequest` and their
 * answers are posted back, and a cancelled or timed-out call sends notifications/cancelled.
 */
export async function postToolCall(
  session: HttpSession,
  name: string,
  args: Record<string, unknown>,
  opts: PostToolCallOptions,
): Promise<CallToolResult> {
  const id = `${PREFIX}${++nextId}`;
  const { url, headers } = prepared(session);
  const params: Record<string, unknown> = { name, arguments: args };
  if (opts.onProgress) params._meta = { progressToken: id };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  const onAbort = () => controller.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) controller.abort();
  try {
    const res = await session.request(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }),
      signal: controller.signal,
    });
    // The read ends when the call is aborted (a timeout, the caller's cancel): the socket is closed.
    const body = bodyOf(res, controller.signal);
    const status = res.statusCode ?? 502;
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (status < 200 || status > 299) throw new UpstreamHttpError(status, await boundedText(body, 4096));
    if (type === 'application/json') return resultOf(parseMessages(await boundedText(body, opts.maxBytes)), id);
    if (type !== 'text/event-stream') {
      res.destroy();
      throw new Error(`unexpected content type "${type.slice(0, 100)}" for tools/call`);
    }
    return await readStream(session, body, id, opts);
  } catch (err) {
    if (controller.signal.aborted) {
      // The upstream stops working on it (it may not notice the closed stream).
      void notify(session, { method: 'notifications/cancelled', params: { requestId: id, reason: timedOut ? 'timeout' : 'cancelled' } });
      if (timedOut) throw Object.assign(new Error('request timed out'), { code: 'REQUEST_TIMEOUT' });
      throw Object.assign(new Error('request cancelled'), { name: 'AbortError' });
    }
    throw err;
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

/** The answer's body, decoded; an abort of `signal` destroys it (and the socket under it), ending any read. */
function bodyOf(res: IncomingMessage, signal: AbortSignal): Readable {
  const body = decodedBody(res);
  const onAbort = () => {
    res.destroy();
    if (body !== res) body.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  body.once('close', () => signal.removeEventListener('abort', onAbort));
  return body;
}

const preparedSessions = new WeakMap<HttpSession, { url: URL; headers: Record<string, string> }>();

/** The session's URL and request headers, made once per session object (Node's client reads both without changing them). */
function prepared(session: HttpSession): { url: URL; headers: Record<string, string> } {
  let p = preparedSessions.get(session);
  if (!p) {
    const headers = {
      ...session.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': session.protocolVersion,
      ...(session.sessionId ? { 'mcp-session-id': session.sessionId } : {}),
    };
    p = { url: new URL(session.url), headers };
    preparedSessions.set(session, p);
  }
  return p;
}

/** A notification or a response to the upstream (202 expected); failures are the upstream's problem, not this call's. */
async function notify(session: HttpSession, message: Record<string, unknown>): Promise<void> {
  try {
    const { url, headers } = prepared(session);
    const res = await session.request(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', ...message }),
      signal: AbortSignal.timeout(10_000),
    });
    res.resume();
  } catch {
    // Nothing to tell the caller: the call itself reports what went wrong.
  }
}

/** The whole body as text, refused past `maxBytes`; rejects when the stream fails or closes before its end. */
function boundedText(body: Readable, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        body.destroy();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    body.once('end', () => resolve(Buffer.concat(chunks, size).toString('utf8')));
    body.on('error', reject);
    body.once('close', () => reject(new Error('the upstream closed the answer before its end')));
  });
}

const tooLarge = (maxBytes: number) =>
  new CoreError('PAYLOAD_TOO_LARGE', `more than gateway.maxResultBytes (${maxBytes})`, {
    details: { reason: 'upstream_result_too_large' },
  });

function parseMessages(text: string): unknown[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error('the upstream answered tools/call with invalid JSON');
  }
  return Array.isArray(data) ? data : [data];
}

type Message = { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };

/** Our call's answer among `messages`: its result, or its JSON-RPC error thrown. */
function resultOf(messages: unknown[], id: string): CallToolResult {
  for (const m of messages as Message[]) {
    if (m?.id !== id || m.method !== undefined) continue;
    // An answer that is no JSON-RPC response (a result that is no object...) is an error, as the SDK client's are (checkedAnswer).
    const checked = checkedAnswer(m) as Message;
    if (checked.error) {
      const e = checked.error as { code?: unknown; message?: unknown; data?: unknown };
      throw new UpstreamRpcError(typeof e.code === 'number' ? e.code : -32603, String(e.message ?? 'error').slice(0, 500), e.data);
    }
    const r = checked.result as CallToolResult;
    // The shape every tools/call result has; anything else is garbage, not a result to pass on.
    if (!Array.isArray(r.content))
      throw new UpstreamRpcError(-32603, 'its result has no content array (content must be an array of content blocks)', {
        reason: INVALID_ANSWER,
      });
    return r;
  }
  throw new Error('the upstream answered without a result for the call');
}

/**
 * Read the call's SSE stream until its response: progress and server-to-client requests on the
 * way. Once answered, the rest of the stream is read and dropped, so the socket goes back to the
 * pool when the upstream ends it (closed after 5 s if it does not).
 */
function readStream(session: HttpSession, body: Readable, id: string, opts: PostToolCallOptions): Promise<CallToolResult> {
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
    let buffer = '';
    let size = 0;
    let answered = false;
    const fail = (err: unknown) => {
      if (answered) return;
      answered = true;
      body.destroy();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > opts.maxBytes + 65_536) return fail(tooLarge(opts.maxBytes));
      buffer += decoder.decode(chunk, { stream: true });
      try {
        for (let end = eventEnd(buffer); end; end = eventEnd(buffer)) {
          const data = dataOf(buffer.slice(0, end.at));
          buffer = buffer.slice(end.at + end.length);
          if (data === undefined) continue;
          for (const m of parseMessages(data) as Message[]) {
            if (m?.id === id && m.method === undefined) {
              const result = resultOf([m], id);
              answered = true;
              body.off('data', onData);
              drain(body);
              resolve(result);
              return;
            }
            handle(session, m, id, opts);
          }
        }
      } catch (err) {
        fail(err);
      }
    };
    body.on('data', onData);
    body.on('error', fail);
    body.once('close', () => fail(new Error('the upstream closed the stream without answering the call')));
  });
}

/** The rest of an answered stream, dropped; a stream that does not end within 5 s is closed. */
function drain(body: Readable): void {
  const stop = setTimeout(() => body.destroy(), 5000);
  body.once('close', () => clearTimeout(stop));
  // The stream ended badly after our answer: nothing to report.
  body.on('error', () => undefined);
  body.resume();
}

/** The end of the first complete event in `buffer` (a blank line), or undefined. */
function eventEnd(buffer: string): { at: number; length: number } | undefined {
  const m = /\r?\n\r?\n/.exec(buffer);
  return m ? { at: m.index, length: m[0].length } : undefined;
}

/** The joined `data:` lines of one event, or undefined (a comment, a priming event with an id only). */
function dataOf(event: string): string | undefined {
  let data: string | undefined;
  for (const line of event.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const value = line.slice(line[5] === ' ' ? 6 : 5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data === undefined || data === '' ? undefined : data;
}

/** The server-to-client requests a caller's client is asked (docs/mcp-gateway.md, "What clients see"); roots never are. */
const FORWARDED: ReadonlySet<string> = new Set(['sampling/createMessage', 'elicitation/create']);

/** A message on the call's stream that is not its answer: its progress, or a request the upstream asks of the client. */
function handle(session: HttpSession, m: Message, id: string, opts: PostToolCallOptions): void {
  if (typeof m?.method !== 'string') return;
  const params = (m.params && typeof m.params === 'object' ? m.params : {}) as Record<string, unknown>;
  if (m.method === 'notifications/progress') {
    if (params.progressToken !== id || typeof params.progress !== 'number') return;
    opts.onProgress?.(
      params.progress,
      typeof params.total === 'number' ? params.total : undefined,
      typeof params.message === 'string' ? params.message : undefined,
    );
    return;
  }
  if (m.id === undefined || m.id === null) return;
  const requestId = m.id;
  const method = m.method;
  // Only what the docs promise reaches the caller's client: roots (its workspace), or anything else an upstream
  // invents, is answered here and never asked of the client.
  if (method !== 'ping' && !FORWARDED.has(method)) {
    const message = `the MCP gateway does not forward ${method.slice(0, 100)} to its clients (only sampling/createMessage and elicitation/create)`;
    void notify(session, { id: requestId, error: { code: -32601, message } });
    return;
  }
  if (method !== 'ping' && !opts.onRequest) {
    const message = `the MCP gateway cannot forward ${method}: the tool was called through /rpc or /trpc, which have no MCP client to ask`;
    void notify(session, { id: requestId, error: { code: -32603, message } });
    return;
  }
  const answer = method === 'ping' ? Promise.resolve({}) : opts.onRequest!(method, params);
  void answer.then(
    (result) => notify(session, { id: requestId, result }),
    (err: unknown) =>
      notify(session, {
        id: requestId,
        error: { code: -32603, message: `the MCP gateway's client did not answer ${method}: ${reasonOf(err)}` },
      }),
  );
}

function reasonOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').slice(0, 300);
}
