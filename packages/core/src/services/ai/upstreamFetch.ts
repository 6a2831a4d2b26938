import { Readable } from 'node:stream';
import type * as Zlib from 'node:zlib';
import type { Dispatcher } from 'undici';
import { lazyRequire } from '../../lib/lazyRequire.js';
import { plainHeaders } from '../../lib/plainHeaders.js';

// Loaded with the first compressed body: a default server decodes none at start.
const zlib = lazyRequire<typeof Zlib>('node:zlib');

/**
 * The `fetch` the AI SDK providers call the upstream with: `undici.request` on one keep-alive
 * `Agent`, wrapped in a WHATWG `Response`. Node's global `fetch` is the same undici underneath,
 * but its spec machinery cost about 0.4 ms of CPU per call, the largest single cost of a
 * gateway call (docs/performance.md, "AI gateway overhead").
 *
 * What it keeps from `fetch`, because the AI SDK and mapUpstreamError rely on it:
 * - a connection failure rejects with `TypeError('fetch failed', { cause })`, the cause carrying
 *   undici's or the socket's `code` (the SDK turns it into a retryable APICallError);
 * - an abort rejects with the signal's reason (an `AbortError`), also once the body is streaming;
 * - the body streams (server-sent events work), and gzip / deflate / br bodies are decoded.
 * What it does not do: follow redirects (a provider base URL must be the final address, and a
 * redirect never carries the key to another host) or add `accept-encoding`. Bodies it cannot
 * send directly (streams, form data, a `Request` input) go to the global `fetch` unchanged.
 */
export type FetchFunction = typeof globalThis.fetch;

type Undici = Pick<typeof import('undici'), 'Agent' | 'request'>;
let loaded: Promise<{ request: Undici['request']; agent: Dispatcher }> | undefined;

/** Loaded on first call, like the AI SDK. Sockets stay open between calls (keep-alive), one request per socket at a time. */
function dispatcher(): Promise<{ request: Undici['request']; agent: Dispatcher }> {
  loaded ??= import('undici').then((u: Undici) => ({ request: u.request, agent: new u.Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 }) }));
  return loaded;
}

/** Load undici now (callers do it before starting an upstream timeout). */
export const loadUpstreamFetch = (): Promise<void> => dispatcher().then(() => undefined);

function decoder(encoding: string | undefined) {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib().createGunzip();
    case 'deflate':
      return zlib().createInflate();
    case 'br':
      return zlib().createBrotliDecompress();
    default:
      return undefined;
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

export const upstreamFetch: FetchFunction = async (input, init = {}) => {
  const body = init.body;
  const sendable = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
  if (!sendable || input instanceof Request) return globalThis.fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);
  const { request, agent: d } = await dispatcher();
  let res: Dispatcher.ResponseData;
  try {
    res = await request(String(input), {
      method: (init.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod,
      headers: plainHeaders(init.headers),
      body: body ?? null,
      dispatcher: d,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (signal?.aborted) throw abortReason(signal);
    throw new TypeError('fetch failed', { cause: err });
  }
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else if (v !== undefined) headers.set(k, v);
  }
  const status = res.statusCode;
  if (status === 204 || status === 205 || status === 304 || init.method?.toUpperCase() === 'HEAD') {
    res.body.resume();
    return new Response(null, { status, headers });
  }
  const decode = decoder(headers.get('content-encoding') ?? undefined);
  let stream: Readable = res.body;
  if (decode) {
    // pipe() does not forward errors: a socket that dies mid-body must still fail the read.
    res.body.once('error', (err) => decode.destroy(err));
    stream = res.body.pipe(decode);
  }
  // An abort after the headers destroys the body with undici's error; fetch reports the reason.
  if (signal) {
    const onAbort = () => {
      res.body.destroy();
      stream.destroy(abortReason(signal) as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
  }
  return new Response(Readable.toWeb(stream) as ReadableStream<Uint8Array>, { status, headers });
};
