import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type * as Stream from 'node:stream';
import { lazyRequire } from '../lib/lazyRequire.js';
import { guardedUrlProblem, type SocketLookup } from './guardedFetch.js';

const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');
const stream = lazyRequire<typeof Stream>('node:stream');

export interface PinnedFetchOptions {
  /** Allow `http:` as well as `https:`. */
  allowHttp: boolean;
  /** Every connection's address comes from this (publicLookupVia: public addresses only). */
  lookup: SocketLookup;
}

/** Statuses whose answer has no body (a Response refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A streaming `fetch` for URLs someone else chose whose every connection is checked where it is
 * made: Node's own client with a socket `lookup` (publicLookupVia: public addresses only), so the
 * address checked is the address connected to (a name that resolves to a public address for a
 * check and to 127.0.0.1 for the connection, DNS rebinding, reaches nothing). Node's global fetch
 * takes no lookup hook without undici, hence Node's http client. Bodies stream both ways (MCP's
 * SSE answers); redirects are not followed (a 3xx is answered as it is: a redirect to an internal
 * host must not be followed unchecked). Refusals and connection failures reject like fetch's
 * (a TypeError with the cause).
 */
export function pinnedFetch(opts: PinnedFetchOptions): typeof fetch {
  const { lookup } = opts;
  let agents: Record<'http:' | 'https:', Http.Agent> | undefined;
  const agentFor = (protocol: 'http:' | 'https:') => {
    agents ??= {
      'http:': new (http().Agent)({ keepAlive: true, lookup: lookup as never }),
      'https:': new (https().Agent)({ keepAlive: true, lookup: lookup as never }),
    };
    return agents[protocol];
  };
  return async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : String(input));
    const problem = guardedUrlProblem(url, { allowHttp: opts.allowHttp, allowPrivateNetwork: false });
    if (problem) throw new TypeError(`fetch failed: refused by the SSRF guard: ${problem}`);
    const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
    const headers = new Headers(request?.headers);
    for (const [k, v] of new Headers(init?.headers)) headers.set(k, v);
    const signal = init?.signal ?? request?.signal ?? undefined;
    const rawBody = init?.body ?? (request && method !== 'GET' && method !== 'HEAD' ? await request.arrayBuffer() : undefined);
    const body =
      rawBody === undefined || rawBody === null
        ? undefined
        : typeof rawBody === 'string'
          ? rawBody
          : Buffer.from(await new Response(rawBody as BodyInit).arrayBuffer());
    const protocol = url.protocol as 'http:' | 'https:';
    const res = await new Promise<Http.IncomingMessage>((resolve, reject) => {
      const req = (protocol === 'https:' ? https() : http()).request(
        url,
        { method, headers: Object.fromEntries(headers), agent: agentFor(protocol), ...(signal ? { signal } : {}) },
        resolve,
      );
      req.once('error', (err) => reject(signal?.aborted ? signal.reason : new TypeError(`fetch failed: ${err.message}`, { cause: err })));
      req.end(body);
    });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (Array.isArray(v)) for (const one of v) out.append(k, one);
      else if (v !== undefined) out.set(k, v);
    }
    const status = res.statusCode ?? 502;
    if (NO_BODY.has(status) || method === 'HEAD') {
      res.resume();
      return new Response(null, { status, statusText: res.statusMessage ?? '', headers: out });
    }
    const webBody = stream().Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>;
    return new Response(webBody, { status, statusText: res.statusMessage ?? '', headers: out });
  };
}
