import type * as Dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type * as Stream from 'node:stream';
import { isIP } from 'node:net';
import type Ipaddr from 'ipaddr.js';
import { lazyRequire } from '../lib/lazyRequire.js';

const ipaddr = lazyRequire<typeof Ipaddr>('ipaddr.js');
// node:dns too: only a guarded fetch resolves names, and a default server makes none at start.
const dns = lazyRequire<typeof Dns>('node:dns');
const http = lazyRequire<typeof Http>('node:http');
const https = lazyRequire<typeof Https>('node:https');
const stream = lazyRequire<typeof Stream>('node:stream');
import { CoreError } from '../kernel/CoreError.js';
import { sendRequest, type HttpRequester } from './httpRequest.js';

/**
 * A GET of a URL someone else chose (a client's metadata document, a configured resource),
 * guarded against server-side request forgery: only public unicast addresses are contacted,
 * checked on the address actually connected to (so a DNS answer that changes between check and
 * connect, "DNS rebinding", cannot reach an internal host), redirects are re-checked hop by hop,
 * and the time and the bytes read are bounded.
 */
export interface GuardedFetchOptions {
  /** Give up after this many ms (whole request, redirects and body included). */
  timeoutMs: number;
  /** Refuse bodies larger than this many bytes (declared or read). */
  maxBytes: number;
  /** Redirects followed, each re-checked. Default 0: a redirect is an error. */
  maxRedirects?: number;
  /** Allow `http:` as well as `https:`. Default false. */
  allowHttp?: boolean;
  /**
   * Allow loopback, private, link-local and other non-public addresses. Default false; for
   * development and tests only (a fetch to 127.0.0.1 or 169.254.169.254 is exactly what SSRF is).
   */
  allowPrivateNetwork?: boolean;
  headers?: Record<string, string>;
  /** Default GET. A POST (an OAuth token or registration request) never follows a redirect. */
  method?: 'GET' | 'POST';
  /** The POST body. */
  body?: string;
  signal?: AbortSignal;
}

export interface GuardedResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  /** The final URL (after redirects). */
  url: string;
}

/** Is this IP address public unicast (not loopback, private, link-local, CGNAT, multicast, reserved...)? */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr().isValid(address)) return false;
  // ipaddr.process turns IPv4-mapped IPv6 (::ffff:10.0.0.1) into the IPv4 address it hides.
  return ipaddr().process(address).range() === 'unicast';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** A socket's `lookup` option (net.connect, http.Agent). */
export type SocketLookup = (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback) => void;

/** How names are resolved: dns.lookup's `all: true` form (a test injects its own resolver). */
export type ResolveAll = (hostname: string, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/** The system's resolver (dns.lookup, all addresses). */
export const systemResolve: ResolveAll = (hostname, callback) => dns().lookup(hostname, { all: true }, callback);

/**
 * A socket `lookup` that only answers with public addresses: the connection uses what it returns,
 * so the address checked is the address connected to (no second resolution a DNS rebinding
 * could change).
 */
export function publicLookupVia(resolve: ResolveAll): SocketLookup {
  return (hostname, options, callback) => {
    resolve(hostname, (err, addresses) => {
      if (err) return callback(err, []);
      const allowed = addresses.filter((a) => isPublicAddress(a.address));
      if (allowed.length === 0) {
        const refused = Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: 'ESSRFBLOCKED' });
        return callback(refused, []);
      }
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** dns.lookup that only answers with public addresses; the connection uses what it returns. */
const publicLookup = publicLookupVia(systemResolve);

/**
 * The requests guardedFetch sends: one pinned request (below) with the lookup above for guarded
 * fetches, and Node's client unguarded for allowPrivateNetwork (tests, development). Guarded and
 * open requests never share an agent: a kept-alive socket opened without the guard must not serve
 * a guarded request. Created on first use: servers that never fetch such URLs never load node:https.
 */
let requests: { guarded: HttpRequester; open: HttpRequester } | undefined;
function requestsFor(): { guarded: HttpRequester; open: HttpRequester } {
  if (requests) return requests;
  const open = {
    'http:': new (http().Agent)({ keepAlive: true, timeout: 5000 }),
    'https:': new (https().Agent)({ keepAlive: true, timeout: 5000 }),
  };
  requests = {
    // The URL is checked by guardedFetch itself, hop by hop, with the caller's allowHttp.
    guarded: pinnedRequest({ allowHttp: true, lookup: publicLookup, agentTimeoutMs: 5000 }),
    open: (url, init) => sendRequest(url, init, open[url.protocol as 'http:' | 'https:']),
  };
  return requests;
}

/** Why this URL may not be fetched, or null. */
export function guardedUrlProblem(url: URL, opts: Pick<GuardedFetchOptions, 'allowHttp' | 'allowPrivateNetwork'>): string | null {
  if (url.protocol !== 'https:' && !(opts.allowHttp && url.protocol === 'http:'))
    return `only ${opts.allowHttp ? 'http and https' : 'https'} URLs may be fetched`;
  if (url.username || url.password) return 'URLs with credentials may not be fetched';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // Address literals skip DNS (and so the lookup guard): check them here.
  if (isIP(host) && !opts.allowPrivateNetwork && !isPublicAddress(host)) return 'non-public addresses may not be fetched';
  return null;
}

function refused(message: string): CoreError {
  return new CoreError('FORBIDDEN', message, { details: { reason: 'ssrf_blocked' } });
}

/**
 * GET (or POST) `url` with the guards above. Throws CoreError: FORBIDDEN (refused address), UPSTREAM_TIMEOUT, UPSTREAM_ERROR,
 * PAYLOAD_TOO_LARGE.
 */
export async function guardedFetch(input: string | URL, opts: GuardedFetchOptions): Promise<GuardedResponse> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let url = new URL(input);
  const maxRedirects = opts.method === 'POST' ? 0 : (opts.maxRedirects ?? 0);
  for (let hop = 0; ; hop++) {
    const problem = guardedUrlProblem(url, opts);
    if (problem) throw refused(problem);
    let res: Http.IncomingMessage;
    try {
      const request = opts.allowPrivateNetwork ? requestsFor().open : requestsFor().guarded;
      res = await request(url, {
        method: opts.method ?? 'GET',
        headers: { ...opts.headers },
        ...(opts.body !== undefined ? { body: opts.body } : {}),
        signal,
      });
    } catch (err) {
      if (timeout.aborted) throw new CoreError('UPSTREAM_TIMEOUT', `fetching ${url.origin} timed out`);
      if (opts.signal?.aborted) throw new CoreError('CANCELLED', 'request cancelled');
      if (causeCode(err) === 'ESSRFBLOCKED') throw refused(`${url.hostname} resolves to a non-public address`);
      throw new CoreError('UPSTREAM_ERROR', `fetching ${url.origin} failed`, { cause: err });
    }
    // The timeout and the caller's cancel end the body's read too.
    const current = res;
    const onAbort = () => current.destroy(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    current.once('close', () => signal.removeEventListener('abort', onAbort));
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.destroy();
      if (hop >= maxRedirects) throw new CoreError('UPSTREAM_ERROR', `${url.origin} answered with a redirect, which is not followed here`);
      url = new URL(res.headers.location, url);
      continue;
    }
    const declared = Number(res.headers['content-length'] ?? '0');
    if (declared > opts.maxBytes) {
      res.destroy();
      throw tooLarge(opts.maxBytes);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        size += chunk.byteLength;
        if (size > opts.maxBytes) {
          res.destroy();
          throw tooLarge(opts.maxBytes);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof CoreError) throw err;
      if (timeout.aborted) throw new CoreError('UPSTREAM_TIMEOUT', `fetching ${url.origin} timed out`);
      if (opts.signal?.aborted) throw new CoreError('CANCELLED', 'request cancelled');
      throw new CoreError('UPSTREAM_ERROR', `reading ${url.origin} failed`, { cause: err });
    }
    // rawHeaders keeps repeated headers apart (res.headers joins some and drops others).
    const headers = new Headers();
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    return { status, headers, body: Buffer.concat(chunks), url: url.href };
  }
}

function tooLarge(maxBytes: number): CoreError {
  return new CoreError('PAYLOAD_TOO_LARGE', `response is larger than ${maxBytes} bytes`);
}

function causeCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (code === 'ESSRFBLOCKED') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export interface PinnedFetchOptions {
  /** Allow `http:` as well as `https:`. */
  allowHttp: boolean;
  /** Every connection's address comes from this (publicLookupVia: public addresses only). */
  lookup: SocketLookup;
  /** Idle kept-alive sockets are closed after this many ms (default: the agent's, none). */
  agentTimeoutMs?: number;
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
  return fetchOver(pinnedRequest(opts));
}

/**
 * The same guard below fetch (net/httpRequest.ts): each request's URL checked, each connection's
 * address from `lookup`. pinnedFetch is this with a WHATWG Response around the answer; the MCP
 * gateway's forwarded tools/call reads the Node stream itself. Refusals and connection failures
 * reject like fetch's (a TypeError with the cause).
 */
export function pinnedRequest(opts: PinnedFetchOptions): HttpRequester {
  const { lookup } = opts;
  let agents: Record<'http:' | 'https:', Http.Agent> | undefined;
  const agentFor = (protocol: 'http:' | 'https:') => {
    const options = { keepAlive: true, lookup: lookup as never, ...(opts.agentTimeoutMs ? { timeout: opts.agentTimeoutMs } : {}) };
    agents ??= { 'http:': new (http().Agent)(options), 'https:': new (https().Agent)(options) };
    return agents[protocol];
  };
  return async (url, init) => {
    const problem = guardedUrlProblem(url, { allowHttp: opts.allowHttp, allowPrivateNetwork: false });
    if (problem) throw new TypeError(`fetch failed: refused by the SSRF guard: ${problem}`);
    try {
      return await sendRequest(url, init, agentFor(url.protocol as 'http:' | 'https:'));
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new TypeError(`fetch failed: ${(err as Error).message}`, { cause: err });
    }
  };
}

/** A streaming fetch over `request`: any input and body fetch takes, the answer as a WHATWG Response. */
export function fetchOver(request: HttpRequester): typeof fetch {
  return async (input, init) => {
    const req = input instanceof Request ? input : undefined;
    const url = new URL(req ? req.url : String(input));
    const method = (init?.method ?? req?.method ?? 'GET').toUpperCase();
    const headers = new Headers(req?.headers);
    for (const [k, v] of new Headers(init?.headers)) headers.set(k, v);
    const signal = init?.signal ?? req?.signal ?? undefined;
    const rawBody = init?.body ?? (req && method !== 'GET' && method !== 'HEAD' ? await req.arrayBuffer() : undefined);
    const body =
      rawBody === undefined || rawBody === null
        ? undefined
        : typeof rawBody === 'string'
          ? rawBody
          : Buffer.from(await new Response(rawBody as BodyInit).arrayBuffer());
    const res = await request(url, {
      method,
      headers: Object.fromEntries(headers),
      ...(body !== undefined ? { body } : {}),
      ...(signal ? { signal } : {}),
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
    // An abort after the headers ends the body's read too (fetch reports the signal's reason).
    if (signal) {
      const onAbort = () => res.destroy(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      res.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    const webBody = stream().Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>;
    return new Response(webBody, { status, statusText: res.statusMessage ?? '', headers: out });
  };
}
