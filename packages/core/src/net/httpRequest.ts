import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type { Readable } from 'node:stream';
import type * as Zlib from 'node:zlib';
import { lazyRequire } from '../lib/lazyRequire.js';

const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');
// Loaded with the first compressed body.
const zlib = lazyRequire<typeof Zlib>('node:zlib');

/**
 * A fetch `init.headers` as a plain record, for code that reads or forwards them without a
 * `Headers` object per request (the upstream request and its observation). The AI SDK leaves
 * optional headers as undefined; fetch drops those, and so does this.
 */
export function plainHeaders(h: HeadersInit | undefined): Record<string, string> {
  if (!h) return {};
  if (h instanceof Headers || Array.isArray(h)) return Object.fromEntries(new Headers(h));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = v;
  return out;
}

/** One request as Node's client takes it: the body already a string or bytes, headers a plain object. */
export interface HttpRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
}

/**
 * A request below `fetch`: resolves with Node's response head (`IncomingMessage`, its body a
 * Node stream still to read), so a caller that reads the body itself pays for no WHATWG
 * `Response`, `Headers` or web stream (the MCP gateway's forwarded tools/call: docs/performance.md,
 * "MCP gateway"). Rejects with the socket's error, or the signal's reason when aborted.
 */
export type HttpRequester = (url: URL, init: HttpRequestInit) => Promise<Http.IncomingMessage>;

/** What an aborted request rejects with, as fetch does: the signal's reason, else an AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * `init` sent on `agent` (its options, a guarded `lookup` among them, apply to every socket it opens).
 * A request that fails on a kept-alive socket before any answer, because the peer had closed that
 * socket while it sat idle (ECONNRESET / EPIPE: the request never reached the peer's handler), is
 * sent once more on another socket, as Node's own documentation of `request.reusedSocket` advises;
 * without it, a server's keep-alive timeout racing our next request fails that request.
 */
export async function sendRequest(url: URL, init: HttpRequestInit, agent: Http.Agent): Promise<Http.IncomingMessage> {
  try {
    return await sendOnce(url, init, agent);
  } catch (err) {
    if (!(err instanceof StaleSocketError)) throw err;
    return sendOnce(url, init, agent).catch((e: unknown) => {
      throw e instanceof StaleSocketError ? e.cause : e;
    });
  }
}

/** A request that died on a reused socket before its answer began (the peer had closed it). */
class StaleSocketError extends Error {
  constructor(override readonly cause: unknown) {
    super('kept-alive socket closed by the peer', { cause });
  }
}

function sendOnce(url: URL, init: HttpRequestInit, agent: Http.Agent): Promise<Http.IncomingMessage> {
  const { signal, body } = init;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<Http.IncomingMessage>((resolve, reject) => {
    // A body sent whole by end() goes with its Content-Length (Node sets it), not chunked, as fetch sends it.
    const req = (url.protocol === 'https:' ? https() : http()).request(url, { method: init.method, headers: init.headers, agent }, resolve);
    const onAbort = () => {
      req.destroy();
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const settled = () => signal?.removeEventListener('abort', onAbort);
    req.once('response', settled);
    req.once('error', (err: NodeJS.ErrnoException) => {
      settled();
      if (signal?.aborted) reject(abortReason(signal));
      else if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) reject(new StaleSocketError(err));
      else reject(err);
    });
    req.end(body);
  });
}

/** The response's body decoded as its content-encoding says (gzip, deflate, br), or the response itself. */
export function decodedBody(res: Http.IncomingMessage): Readable {
  return decodedStream(res, res.headers['content-encoding']);
}

/** A body stream decoded as `encoding` (a content-encoding: gzip, deflate, br), or the stream itself. */
export function decodedStream(body: Readable, contentEncoding: string | null | undefined): Readable {
  const encoding = contentEncoding?.trim().toLowerCase();
  const decode =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib().createGunzip()
      : encoding === 'deflate'
        ? zlib().createInflate()
        : encoding === 'br'
          ? zlib().createBrotliDecompress()
          : undefined;
  if (!decode) return body;
  // pipe() does not forward errors: a socket that dies mid-body must still fail the read.
  body.once('error', (err) => decode.destroy(err));
  return body.pipe(decode);
}
