import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type { Readable } from 'node:stream';
import type * as Zlib from 'node:zlib';
import { lazyRequire } from '../lib/lazyRequire.js';

const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');
// Loaded with the first compressed body.
const zlib = lazyRequire<typeof Zlib>('node:zlib');

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

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** `init` sent on `agent` (its options, a guarded `lookup` among them, apply to every socket it opens). */
export function sendRequest(url: URL, init: HttpRequestInit, agent: Http.Agent): Promise<Http.IncomingMessage> {
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
    req.once('error', (err) => {
      settled();
      reject(signal?.aborted ? abortReason(signal) : err);
    });
    req.end(body);
  });
}

/** The response's body decoded as its content-encoding says (gzip, deflate, br), or the response itself. */
export function decodedBody(res: Http.IncomingMessage): Readable {
  const encoding = res.headers['content-encoding']?.trim().toLowerCase();
  const decode =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib().createGunzip()
      : encoding === 'deflate'
        ? zlib().createInflate()
        : encoding === 'br'
          ? zlib().createBrotliDecompress()
          : undefined;
  if (!decode) return res;
  // pipe() does not forward errors: a socket that dies mid-body must still fail the read.
  res.once('error', (err) => decode.destroy(err));
  return res.pipe(decode);
}
