import type { Context as HonoContext } from 'hono';
import {
  CoreError,
  toWireError,
  type ParsedCall,
  type RequestScope,
  type EntryGateway,
  type TransportName,
} from '@ai-backend/core/internal';
import { bearerToken, clientIp, requestTokenInQuery } from './requestFacts.js';

/** What an entry point's reading of a request gave: the calls core decides on, and what its `run` needs. */
export interface ReadCalls<P> {
  calls: ParsedCall[];
  parsed: P;
}

/**
 * Where an entry point's access refusals go:
 * - 'http': the request is refused as a whole, with the 401/403 and `WWW-Authenticate` that make
 *   a client sign in or step up (/v1, /mcp: their clients only start OAuth on these);
 * - 'per-call': each refused call is answered in the body, beside the others of its batch
 *   (JSON-RPC 2.0 §6 answers a batch call by call; tRPC does the same).
 */
export type RefusalPlacement = 'http' | 'per-call';

/**
 * Where an entry point counts its tool calls against `maxToolCalls`:
 * - 'before-dispatch': in the sequence's limits step, for the calls it read (a 429 before any runs);
 * - 'per-call': in core's base middleware, one call at a time (a batch's calls over the limit are
 *   refused one by one, the others run).
 */
export type ToolCallCounting = 'before-dispatch' | 'per-call';

/**
 * How an entry point refuses (see RefusalPlacement, ToolCallCounting): an entry point that
 * refuses requests at HTTP level formats those refusals (`refuse`); one that answers refusals per
 * call leaves every refusal to its calls.
 */
export type EntryAdmission =
  | {
      refusals: 'http';
      toolCalls: ToolCallCounting;
      /** A refusal of the sequence (credential, access, limits) in this entry point's format; `status` is the HTTP status it calls for. */
      refuse(c: HonoContext, scope: RequestScope, error: CoreError, status: number, headers?: Record<string, string>): Response;
    }
  | { refusals: 'per-call'; toolCalls: 'per-call' };

/** One entry point (/trpc, /rpc, /mcp, a /v1 wire format): only how it reads calls and answers. */
export type EntrySpec<P> = EntryAdmission & {
  /** Labels the calls' statistics and logs; never changes a rule. */
  transport: TransportName;
  /**
   * A limit on requests as such (MCP's `maxRequests`), counted right after authentication and
   * before a refused credential is answered, so floods of bad tokens are limited too. A Response
   * when over it.
   */
  limitRequest?(scope: RequestScope): Promise<Response | null>;
  /** Read and parse the request: its calls, or a Response (an unreadable body, in this entry point's format). */
  readCalls(c: HonoContext, scope: RequestScope): Promise<ReadCalls<P> | Response>;
  /** Invoke the admitted calls and format the answer. */
  run(c: HonoContext, scope: RequestScope, parsed: P): Promise<Response>;
};

/**
 * The one entry sequence (the way tRPC's `resolveResponse` fixes the order for every adapter).
 * The edge guards (origin, host, content type, body size) ran before, as middleware of the route
 * (createServer). Then, in this order, for every entry point:
 * 1. request scope: the credential verified once (query-string tokens refused);
 * 2. request limit (if the entry point has one), then the credential: a refused one, or an API
 *    key over its requests per minute, ends the request ('http') or fails each call ('per-call');
 * 3. read and parse the calls;
 * 4. the access decision, once per call (RequestScope keeps it; the base middleware reuses it);
 * 5. tool-call limits ('before-dispatch');
 * 6. invoke and format (`run`).
 * `observe` (tests) is told each step as it starts.
 */
export async function serveEntry<P>(
  c: HonoContext,
  gateway: EntryGateway,
  spec: EntrySpec<P>,
  observe?: (step: EntryStep) => void,
): Promise<Response> {
  observe?.('scope');
  const scope = await openScope(c, gateway, spec.transport);
  // A credential the store could not check waits for the store (503), never for a sign-in. It is
  // answered before the request limit: the store that failed the credential holds the counters
  // too (without a Redis beside it), and counting would wait for its timeout a second time.
  const unchecked = spec.refusals === 'http' ? scope.credentialUnchecked() : null;
  if (spec.limitRequest && !unchecked) {
    observe?.('request limit');
    let over: Response | null;
    try {
      over = await spec.limitRequest(scope);
    } catch (err) {
      // Counters in the store every call needs refuse when it fails (RateLimiter.storeOutage).
      return refuseOutage(c, spec, scope, err);
    }
    if (over) return over;
  }
  if (spec.refusals === 'http') {
    observe?.('credential');
    if (unchecked) return spec.refuse(c, scope, unchecked, toWireError(unchecked).httpStatus);
    const refused = scope.challenge();
    if (refused) return spec.refuse(c, scope, refused.error, refused.status, refused.headers);
    // An API key over its requests per minute: this request was counted and is refused whole (429).
    const keyRefusal = scope.keyRefusal;
    if (keyRefusal) return spec.refuse(c, scope, keyRefusal, toWireError(keyRefusal).httpStatus, keyRefusal.headers);
  }
  observe?.('read calls');
  const read = await spec.readCalls(c, scope);
  if (read instanceof Response) return read;
  observe?.('access decision');
  for (const call of read.calls) scope.decide(call);
  if (spec.refusals === 'http') {
    // Built from the decisions just made (the scope keeps them), not decided again.
    const ch = scope.challenge(read.calls);
    if (ch) return spec.refuse(c, scope, ch.error, ch.status, ch.headers);
    if (spec.toolCalls === 'before-dispatch') {
      observe?.('limits');
      let limited: Awaited<ReturnType<RequestScope['limitToolCalls']>>;
      try {
        limited = await scope.limitToolCalls(read.calls);
      } catch (err) {
        return refuseOutage(c, spec, scope, err);
      }
      if (limited.refused) return spec.refuse(c, scope, limited.refused, 429, limited.refused.headers);
    }
  }
  observe?.('invoke');
  return spec.run(c, scope, read.parsed);
}

/**
 * A limit's count that the store failed (a CoreError: UNAVAILABLE), answered as the entry point
 * answers any refusal; anything else is not an outage and goes on up.
 */
function refuseOutage<P>(c: HonoContext, spec: EntrySpec<P>, scope: RequestScope, err: unknown): Response {
  if (!(err instanceof CoreError) || spec.refusals !== 'http') throw err;
  return spec.refuse(c, scope, err, toWireError(err).httpStatus);
}

/**
 * Open core's request scope for one HTTP request: the one place transports hand the request
 * facts to core (which verifies the credential once, whatever the number of calls).
 */
function openScope(c: HonoContext, gateway: EntryGateway, transport: TransportName): Promise<RequestScope> {
  const url = c.req.url;
  return gateway.openScope({
    transport,
    method: c.req.method,
    url,
    headers: c.req.raw.headers,
    bearer: bearerToken(c.req.raw),
    tokenInQuery: requestTokenInQuery(url),
    ip: clientIp(c, gateway.config.trustProxy),
    signal: () => c.req.raw.signal,
  });
}

export type EntryStep = 'scope' | 'request limit' | 'credential' | 'read calls' | 'access decision' | 'limits' | 'invoke';
