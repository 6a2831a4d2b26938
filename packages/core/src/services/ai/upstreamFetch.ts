import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { finished, Readable } from 'node:stream';
import { lazyRequire } from '../../lib/lazyRequire.js';
import { plainHeaders } from '../../lib/plainHeaders.js';
import { abortReason, decodedBody, sendRequest, type HttpRequester } from '../../net/httpRequest.js';

// Loaded with the first upstream call (node:https brings TLS): a server that calls no provider never loads them.
const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');

/**
 * The `fetch` the AI SDK providers call the upstream with: Node's own `node:http` / `node:https`
 * client on one keep-alive agent per protocol, wrapped in a WHATWG `Response`. The global `fetch`
 * cost about 0.4 ms more CPU per call, the largest single cost of a gateway call
 * (docs/performance.md, "AI gateway overhead"); `node:http` keeps most of that saving without a
 * second HTTP client in node_modules (the `undici` package this used before).
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
 * Sockets stay open between calls (keep-alive), one request per socket at a time; an idle
 * socket is closed after 10 s (the agent destroys a free socket when its timeout fires).
 */
let agents: { http: Http.Agent; https: Https.Agent } | undefined;
function agentFor(protocol: string): Http.Agent {
  agents ??= {
    http: new (http().Agent)({ keepAlive: true, timeout: 10_000 }),
    https: new (https().Agent)({ keepAlive: true, timeout: 10_000 }),
  };
  return protocol === 'https:' ? agents.https : agents.http;
}

/** Load the client now (callers do it before starting an upstream timeout). */
export const loadUpstreamFetch = (): Promise<void> => {
  agentFor('https:');
  return Promise.resolve();
};

/**
 * The same client below fetch (net/httpRequest.ts): the MCP gateway's forwarded tools/call reads
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
  const headers = plainHeaders(init.headers);
  // As fetch does: a body of known size goes with its length, not chunked.
  if (body !== undefined && body !== null && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
    headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  const res = await upstreamRequest(url, {
    method: (init.method ?? 'GET').toUpperCase(),
    headers,
    ...(body !== undefined && body !== null ? { body } : {}),
    ...(signal ? { signal } : {}),
  });
  // rawHeaders keeps repeated headers apart (res.headers joins some and drops others).
  const responseHeaders = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 502;
  if (status === 204 || status === 205 || status === 304 || init.method?.toUpperCase() === 'HEAD') {
    res.resume();
    return new Response(null, { status, headers: responseHeaders });
  }
  const stream = decodedBody(res);
  // An abort after the headers: fetch reports the signal's reason, not the socket's error.
  if (signal) {
    const onAbort = () => {
      stream.destroy(abortReason(signal) as Error);
      if (stream !== res) res.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
  }
  return new NodeBodyResponse(stream, { status, headers: responseHeaders });
};

const utf8 = new TextDecoder();

/**
 * A `Response` over a Node stream, made a web stream only when someone asks for `body` (a
 * streamed answer). A whole-body read (`text`, `json`, `arrayBuffer`: every non-streamed answer,
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
    this.#web ??= Readable.toWeb(this.#stream) as ReadableStream<Uint8Array<ArrayBuffer>>;
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
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      finished(stream, (err) => {
        if (err) reject(err);
        else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      });
    });
  }
}
