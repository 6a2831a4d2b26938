import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type * as Undici from 'undici';
import { finished, type Readable } from 'node:stream';
import { lazyRequire } from '../../lib/lazyRequire.js';
import { abortReason, decodedStream, plainHeaders, sendRequest, type HttpRequester } from '../../net/httpRequest.js';

// Loaded with the first upstream call (node:https brings TLS): a server that calls no provider never loads them.
const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');
// undici is the AI SDK's own dependency (@ai-sdk/provider-utils): no package more in the install.
const undici = lazyRequire<typeof Undici>('undici');

/**
 * The `fetch` the AI SDK providers and the /v1 pass-through call the upstream with: undici's
 * dispatcher `request` (the HTTP client Node's own `fetch` is built on, without the WHATWG layers
 * around it) on one keep-alive pool per origin, its answer wrapped in a WHATWG `Response` whose
 * body becomes a web stream only when asked for. Per call it costs well under half the CPU of
 * `node:http` with a `Response` around it, which this used before, and a third of the global
 * `fetch` (docs/performance.md, "Upstream HTTP client"): the largest single cost of a gateway call.
 *
 * What it keeps from `fetch`, because the AI SDK and mapUpstreamError rely on it:
 * - a connection failure rejects with `TypeError('fetch failed', { cause })`, the cause carrying
 *   the socket's `code` (the SDK turns it into a retryable APICallError);
 * - an abort rejects with the signal's reason (an `AbortError`), also once the body is streaming;
 * - the body streams (server-sent events work), and gzip / deflate / br bodies are decoded.
 * What it does not do: follow redirects (a provider base URL must be the final address, and a
 * redirect never carries the key to another host) or add `accept-encoding`. Bodies it cannot
 * send directly (streams, form data, a `Request` input) go to the global `fetch` unchanged.
 */
export type FetchFunction = typeof globalThis.fetch;

/**
 * The MCP gateway's client (upstreamRequest, below): node:http, whose `IncomingMessage` the
 * forwarded tools/call reads. Sockets stay open between calls (keep-alive), one request per
 * socket at a time; an idle socket is closed after 10 s (the agent destroys a free socket when its
 * timeout fires).
 */
let agents: { http: Http.Agent; https: Https.Agent } | undefined;
function agentFor(protocol: string): Http.Agent {
  agents ??= {
    http: new (http().Agent)({ keepAlive: true, timeout: 10_000 }),
    https: new (https().Agent)({ keepAlive: true, timeout: 10_000 }),
  };
  return protocol === 'https:' ? agents.https : agents.http;
}

/**
 * The AI upstreams' client: undici's dispatcher API, one keep-alive pool per origin (undici's
 * `Agent`), sockets kept 10 s idle at most (less when the server's Keep-Alive header says so).
 * undici's own head and body timeouts (300 s each by default) are off: how long an upstream may
 * take is `ai.timeoutMs` and the stream's idle limit, through the call's signal, and a reasoning
 * model's answer may take longer than five minutes.
 */
export const upstreamAgentOptions = { keepAliveTimeout: 10_000, keepAliveMaxTimeout: 10_000, headersTimeout: 0, bodyTimeout: 0 } as const;
let agent: Undici.Agent | undefined;
const dispatcher = (): Undici.Agent => (agent ??= new (undici().Agent)(upstreamAgentOptions));

/** Load the client now (callers do it before starting an upstream timeout). */
export const loadUpstreamFetch = (): Promise<void> => {
  dispatcher();
  return Promise.resolve();
};

/**
 * A request below fetch on node:http (net/httpRequest.ts): the MCP gateway's forwarded tools/call reads
 * the answer's Node stream itself (its body is not decoded here: decodedBody does that). A
 * connection failure rejects as fetch's does: `TypeError('fetch failed', { cause })`.
 */
export const upstreamRequest: HttpRequester = (url, init) =>
  sendRequest(url, init, agentFor(url.protocol)).catch((err: unknown) => {
    throw init.signal?.aborted ? err : new TypeError('fetch failed', { cause: err });
  });

export const upstreamFetch: FetchFunction = async (input, init = {}) => {
  const body = init.body;
  const sendable = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
  if (!sendable || input instanceof Request) return globalThis.fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);
  const url = new URL(String(input));
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return globalThis.fetch(input, init);
  const method = (init.method ?? 'GET').toUpperCase();
  let res: Undici.Dispatcher.ResponseData;
  try {
    res = await dispatcher().request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: method as Undici.Dispatcher.HttpMethod,
      headers: plainHeaders(init.headers),
      body: body ?? null,
      signal: signal ?? null,
    });
  } catch (err) {
    // As fetch: the signal's reason when aborted, else TypeError('fetch failed') with the socket's error as its cause.
    if (signal?.aborted) throw abortReason(signal);
    throw new TypeError('fetch failed', { cause: err });
  }
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v);
    else if (value !== undefined) responseHeaders.append(name, value);
  }
  const status = res.statusCode;
  if (status === 204 || status === 205 || status === 304 || method === 'HEAD') {
    res.body.resume();
    return new Response(null, { status, headers: responseHeaders });
  }
  // undici destroys the body with the signal's reason on an abort after the head (fetch's error too).
  return new NodeBodyResponse(decodedStream(res.body, responseHeaders.get('content-encoding')), { status, headers: responseHeaders });
};

const utf8 = new TextDecoder();

/**
 * The largest answer read whole (`text`, `json`, `arrayBuffer`: every non-streamed answer, on the
 * SDK path and the pass-through path): 64 MiB, far above any model's output (128 K tokens of JSON
 * are a few MB), so a broken or hostile upstream cannot make the server buffer without bound. A
 * larger one fails the read with `code: 'ERR_ANSWER_TOO_LARGE'` and its connection is closed.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

const answerTooLarge = () =>
  Object.assign(new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`), { code: 'ERR_ANSWER_TOO_LARGE' });

/**
 * A web stream over a Node stream, chunk for chunk: a streamed answer's body (the AI SDK's event
 * streams, the pass-through stream). It does what `Readable.toWeb` does for this one use with less
 * per chunk: 0.96x the instructions of a streamed /v1 call (docs/performance.md, "Instructions per
 * /v1 call"). The reader sets the pace (the Node stream pauses while the web stream's queue is
 * full); an error (a socket's, an abort's reason) fails the read, a close before the end fails it
 * as premature, and cancelling destroys the Node stream, which closes the connection under it.
 */
function webStreamOf(stream: Readable): ReadableStream<Uint8Array<ArrayBuffer>> {
  let controller!: ReadableStreamDefaultController<Uint8Array<ArrayBuffer>>;
  let done = false;
  const finish = (err?: unknown) => {
    if (done) return;
    done = true;
    if (err === undefined) controller.close();
    else controller.error(err);
  };
  return new ReadableStream<Uint8Array<ArrayBuffer>>(
    {
      start(c) {
        controller = c;
        stream.on('data', (chunk: Buffer) => {
          if (done) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) as Uint8Array<ArrayBuffer>);
          if ((controller.desiredSize ?? 1) <= 0) stream.pause();
        });
        stream.once('end', () => finish());
        stream.once('error', (err) => finish(err));
        // Closed without an end or an error: the body broke off.
        stream.once('close', () =>
          finish(Object.assign(new Error('the body ended before it was complete'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })),
        );
      },
      pull() {
        stream.resume();
      },
      cancel(reason) {
        done = true;
        stream.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    { highWaterMark: 16 },
  );
}

/**
 * A `Response` over a Node stream, made a web stream (webStreamOf) only when someone asks for
 * `body` (a streamed answer). A whole-body read (`text`, `json`, `arrayBuffer`: every non-streamed answer,
 * on the SDK path and the pass-through path) takes the Node stream's chunks directly: through
 * `Readable.toWeb` it cost a web stream, a reader and a promise per chunk, about 3 % of a BYOK
 * call's CPU (docs/performance.md, "/v1 pass-through"). Errors are the stream's own: an abort's
 * reason, a socket's error.
 */
class NodeBodyResponse extends Response {
  #stream: Readable;
  #web: ReadableStream<Uint8Array<ArrayBuffer>> | undefined;
  #read = false;

  constructor(stream: Readable, init: ResponseInit) {
    super(null, init);
    this.#stream = stream;
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    this.#web ??= webStreamOf(this.#stream);
    return this.#web;
  }

  override get bodyUsed(): boolean {
    return this.#read || this.#web?.locked === true;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const b = await this.#bytes();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async text(): Promise<string> {
    return utf8.decode(await this.#bytes());
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  override async blob(): Promise<Blob> {
    return new Blob([await this.arrayBuffer()], { type: this.headers.get('content-type') ?? '' });
  }

  override formData(): Promise<FormData> {
    return new Response(this.body, { headers: this.headers }).formData();
  }

  override clone(): Response {
    const [mine, theirs] = this.body.tee();
    this.#web = mine;
    return new Response(theirs, { status: this.status, statusText: this.statusText, headers: this.headers });
  }

  #bytes(): Promise<Buffer> {
    if (this.#web) return new Response(this.#web).arrayBuffer().then((b) => Buffer.from(b));
    if (this.#read) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    this.#read = true;
    const stream = this.#stream;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > MAX_ANSWER_BYTES) stream.destroy(answerTooLarge());
        else chunks.push(chunk);
      });
      finished(stream, (err) => {
        if (err) reject(err);
        else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      });
    });
  }
}
