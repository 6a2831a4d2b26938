import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import { getHTTPStatusCode, getTRPCErrorFromUnknown, getTRPCErrorShape, transformTRPCResponse, TRPCError } from '@ai-backend/core/internal';

/**
 * One tRPC call that takes the short way: a GET query or a JSON POST mutation, not batched, not
 * streamed, to a procedure the router already holds. Everything else goes through tRPC's own
 * fetch adapter (`fetchRequestHandler`), which also answers every malformed request.
 */
export interface SingleCall {
  path: string;
  procedure: AnyTRPCProcedure;
  type: 'query' | 'mutation';
  /** A query's `input` parameter, the JSON text of its input (null: none); a mutation's input is its body. */
  queryInput: string | null;
}

const trimSlashes = (p: string) => p.slice(p.startsWith('/') ? 1 : 0, p.endsWith('/') ? -1 : undefined);

/** Media type of a header value as tRPC compares it (RFC 9110 §8.3.1: case-insensitive, no parameters). */
const mediaType = (value: string | null) => value?.toLowerCase().split(';', 1)[0]?.trim();

/**
 * The call a request makes, when it is the common one-call shape; undefined otherwise (the request
 * then goes to tRPC's adapter unchanged, so its answers stay tRPC's own). `pathname` is the
 * request's raw path, `endpoint` the mount point (`/trpc`).
 */
export function singleCallOf(req: Request, url: string, endpoint: string, router: AnyTRPCRouter): SingleCall | undefined {
  const q = url.indexOf('?');
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const pathname = url.slice(start, q < 0 ? undefined : q);
  const path = trimSlashes(trimSlashes(pathname).slice(trimSlashes(endpoint).length));
  // Batches (a,b), percent-encoded paths and lazily loaded routers take tRPC's way.
  if (path.includes(',') || path.includes('%') || path.includes('/')) return undefined;
  const procedure = (router._def.procedures as Record<string, AnyTRPCProcedure | undefined>)[path];
  if (!procedure) return undefined;
  const type = procedure._def.type;
  const headers = req.headers;
  // Streamed answers (httpBatchStreamLink's Accept: application/jsonl) take tRPC's way.
  if (headers.has('trpc-accept') || headers.get('accept')?.includes('jsonl')) return undefined;
  if (req.method === 'GET') {
    // tRPC reads a GET's input from the query whatever its content type, except these two, which it refuses.
    const media = mediaType(headers.get('content-type'));
    if (type !== 'query' || media === 'multipart/form-data' || media === 'application/octet-stream') return undefined;
    const params = q < 0 ? null : new URLSearchParams(url.slice(q + 1));
    if (params && (params.has('batch') || params.has('connectionParams'))) return undefined;
    return { path, procedure, type, queryInput: params?.get('input') ?? null };
  }
  if (req.method === 'POST') {
    if (type !== 'mutation' || mediaType(headers.get('content-type')) !== 'application/json') return undefined;
    if (q >= 0 && new URLSearchParams(url.slice(q + 1)).has('batch')) return undefined;
    return { path, procedure, type, queryInput: null };
  }
  return undefined;
}

/** A value tRPC refuses to answer without streaming (an async iterable, or an object of promises or iterables). */
function isDataStream(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  if (Symbol.asyncIterator in v) return true;
  const values = Object.values(v);
  return values.some((x) => x instanceof Promise || (typeof x === 'object' && x !== null && Symbol.asyncIterator in x));
}

export interface SingleCallOptions<TCtx> {
  router: AnyTRPCRouter;
  call: SingleCall;
  /** A mutation's body (its input's JSON text); read only when the procedure asks for its input. */
  body: () => Promise<string>;
  createContext: () => Promise<TCtx>;
  signal: AbortSignal;
  /** Headers for the answer (CORS, and what the error asks for); called once the outcome is known. */
  headersFor: (error: TRPCError | undefined) => Record<string, string>;
  /** A failure, with the path tRPC's onError names (none for a request-level one). */
  onError: (error: TRPCError, path: string | undefined) => void;
}

/**
 * Answer one call exactly as tRPC's `resolveResponse` answers a one-call request (same body,
 * status and headers; checked against it in singleCall.test.ts), without what a batch or a stream
 * needs: tRPC builds two combined AbortSignals per call, a Headers object and a URL per request,
 * which were a fifth of this route's CPU in bench/trpcPath.mjs. The procedure is called with
 * tRPC's procedure caller, its errors shaped with tRPC's own `getTRPCErrorShape` (our
 * errorFormatter) and its result serialized with `transformTRPCResponse` (superjson).
 */
export async function answerSingleCall<TCtx>(o: SingleCallOptions<TCtx>): Promise<Response> {
  const { router, call } = o;
  const config = router._def._config;
  let ctx: TCtx | undefined;
  let input: unknown;
  let parsed = false;
  const getRawInput = async () => {
    if (parsed) return input;
    try {
      const text = call.type === 'query' ? call.queryInput : await o.body();
      const json = text ? JSON.parse(text) : undefined;
      input = json === undefined ? undefined : config.transformer.input.deserialize(json);
    } catch (cause) {
      // As tRPC's own input reader: a malformed input is the caller's error.
      if (cause instanceof TRPCError) throw cause;
      throw new TRPCError({ code: 'BAD_REQUEST', message: cause instanceof Error ? cause.message : 'Invalid input', cause });
    }
    parsed = true;
    return input;
  };
  let body: { result: { data: unknown } } | { error: unknown };
  let error: TRPCError | undefined;
  let data: unknown;
  try {
    ctx = await o.createContext();
    // The procedure itself, as resolveResponse calls it (callTRPCProcedure would look it up again).
    data = await call.procedure({ path: call.path, getRawInput, ctx, type: call.type, signal: o.signal, batchIndex: 0 });
    body = { result: { data } };
  } catch (cause) {
    error = getTRPCErrorFromUnknown(cause);
    o.onError(error, call.path);
    body = { error: getTRPCErrorShape({ config, ctx, error, input: parsed ? input : undefined, path: call.path, type: call.type }) };
  }
  if (!error && isDataStream(data)) {
    // tRPC refuses this after the call, as a request-level error: without path or input.
    error = new TRPCError({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'Cannot use stream-like response in non-streaming request - use httpBatchStreamLink',
    });
    o.onError(error, undefined);
    body = { error: getTRPCErrorShape({ config, ctx, error, input: undefined, path: undefined, type: call.type }) };
  }
  const status = getHTTPStatusCode(body as never, error ? [error] : []);
  const headers: Record<string, string> = { vary: 'trpc-accept, accept', 'content-type': 'application/json', ...o.headersFor(error) };
  return new Response(JSON.stringify(transformTRPCResponse(config, body as never)), { status, headers });
}
