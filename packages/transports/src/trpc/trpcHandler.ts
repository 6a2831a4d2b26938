import type { Context as HonoContext, Handler } from 'hono';
import type { TRPCError } from '@trpc/server';
import {
  coreErrorOf,
  fetchRequestHandler,
  logWireError,
  toWireError,
  type RequestScope,
  type EntryGateway,
} from '@ai-backend/core/internal';
import { withBufferedBody } from '../edge/bodyLimit.js';
import { withCorsHeaders } from '../edge/cors.js';
import { serveEntry } from '../edge/serveEntry.js';
import { closeAfterRefusal, isRefusal, refusalResponse, type ClosableResponse, type StreamAdmission } from '../edge/StreamAdmission.js';
import { answerSingleCall, singleCallOf, type SingleCall } from './singleCall.js';

/** A refusal that asks the client to sign in (again, or with more scope). */
const needsChallenge = (e: TRPCError) => e.code === 'UNAUTHORIZED' || coreErrorOf(e)?.appCode === 'INSUFFICIENT_SCOPE';

/**
 * The answer's headers: CORS, those the errors ask for (Retry-After), and on a 401 (or a 403 for
 * a missing scope) the request scope's `WWW-Authenticate` challenge, as /v1 and /mcp send it
 * (RFC 9110 §15.5.2: a 401 carries a challenge; RFC 9728: it names our resource metadata).
 */
function answerHeaders(
  c: HonoContext,
  errors: readonly TRPCError[],
  scope: RequestScope,
  paths: readonly string[],
): Record<string, string> {
  // Into the Response tRPC builds: setting them on it afterwards (the cors middleware's fallback)
  // cost about a sixth of this route's CPU in bench/trpcPath.mjs.
  const record: Record<string, string> = withCorsHeaders(c, {});
  for (const e of errors) Object.assign(record, toWireError(e).headers);
  if (errors.some(needsChallenge))
    Object.assign(record, scope.challenge(paths.map((path) => ({ kind: 'procedure' as const, path })))?.headers);
  return record;
}

/**
 * /trpc and /typedrpc over the shared router, so tRPC clients get exactly what they expect
 * (batching, superjson, GET queries, streaming). A single query or mutation is answered by
 * `answerSingleCall` (tRPC's own procedure call, error shape and serializer, without the
 * per-request machinery a batch or a stream needs); everything else by tRPC's fetch adapter.
 * A streamed batch (httpBatchStreamLink: JSON lines for as long as its calls run) is a long-lived
 * response: it takes a place in the server's stream admission first and keeps it until it ends.
 */
export function trpcHandler(getGateway: () => Promise<EntryGateway>, endpoint: string, streams: StreamAdmission): Handler {
  return async (c) => {
    const gateway = await getGateway();
    // When mounted under a prefix (app.route('/api', server.app)), the endpoint is the matched route.
    const mount = c.req.routePath.endsWith('/*') ? c.req.routePath.slice(0, -2) : endpoint;
    const req = c.req.raw;
    return serveEntry<SingleCall | undefined>(c, gateway, {
      transport: 'trpc',
      // tRPC answers each call of a batch with its own error (a lone call's 401 gets the challenge below).
      refusals: 'per-call',
      // tRPC parses batches and streams itself: tool calls are counted as its calls run.
      toolCalls: 'per-call',
      async readCalls() {
        const call = singleCallOf(req, req.url, mount, gateway.router);
        return { calls: call ? [{ kind: 'procedure', path: call.path }] : [], parsed: call };
      },
      run: (c, scope, call) => (call ? answerOne(c, gateway, scope, call) : answerByAdapter(c, gateway, scope, mount, streams)),
    });
  };
}

const onError = (gateway: EntryGateway) => (error: TRPCError, path: string | undefined) =>
  logWireError(gateway.logger, toWireError(error), { transport: 'trpc', path });

/** The common one-call shape, on the short way (singleCall.ts). */
function answerOne(c: HonoContext, gateway: EntryGateway, scope: RequestScope, call: SingleCall): Promise<Response> {
  return answerSingleCall({
    router: gateway.router,
    call,
    // bodyLimit read it into Hono's body cache.
    body: () => c.req.text(),
    createContext: async () => scope.context(),
    signal: c.req.raw.signal,
    headersFor: (error) => answerHeaders(c, error ? [error] : [], scope, [call.path]),
    onError: onError(gateway),
  });
}

/** Everything else (batches, streams, subscriptions, malformed requests): tRPC's own fetch adapter. */
async function answerByAdapter(
  c: HonoContext,
  gateway: EntryGateway,
  scope: RequestScope,
  mount: string,
  streams: StreamAdmission,
): Promise<Response> {
  const req = c.req.raw;
  // A subscription (a custom router's, answered by tRPC as server-sent events) is as long-lived
  // as a streamed batch: it takes its place before it runs too.
  const streamed =
    req.headers.get('trpc-accept')?.includes('jsonl') ||
    req.headers.get('accept')?.includes('jsonl') ||
    isSubscriptionCall(req.url, mount, gateway.router);
  const outgoing = (c.env as { outgoing?: ClosableResponse } | undefined)?.outgoing;
  let place: (() => void) | undefined;
  if (streamed) {
    const taken = streams.take(scope.facts.ip, scope.identity?.sub);
    if (isRefusal(taken)) {
      closeAfterRefusal(outgoing);
      return refusalResponse('trpc', taken);
    }
    place = taken;
  }
  let res: Response;
  try {
    res = await fetchRequestHandler({
      endpoint: mount,
      req: await withBufferedBody(c),
      router: gateway.router,
      maxBatchSize: gateway.config.limits.maxBatchSize,
      createContext: async () => scope.context(),
      responseMeta({ errors, paths }) {
        const record = answerHeaders(c, errors, scope, paths ?? []);
        // A plain record: tRPC v11 sets its entries on the response's Headers, and building a
        // Headers object of our own only to have it copied cost a few µs per request
        // (bench/trpcPath.mjs). tRPC marks the record form for removal in v12.
        for (const _ in record) return { headers: record };
        return {};
      },
      onError: ({ error, path }) => onError(gateway)(error, path),
    });
  } catch (err) {
    place?.();
    throw err;
  }
  // tRPC answers a request it refuses before any call (a batch over maxBatchSize) with a JSON
  // body and no content type, which a string body makes text/plain (the web Response, and the
  // Node adapter when it writes the answer).
  const type = res.headers.get('content-type');
  if (res.status !== 204 && (type === null || type.startsWith('text/plain'))) res.headers.set('content-type', 'application/json');
  return place ? streams.hold(res, place, outgoing, 'any-body', scope) : res;
}

/**
 * Whether a request calls a subscription procedure, read as tRPC's fetch adapter reads it (the
 * path after the mount point, slashes trimmed, percent-decoded; subscriptions are never batched).
 */
function isSubscriptionCall(url: string, mount: string, router: EntryGateway['router']): boolean {
  const { pathname, searchParams } = new URL(url);
  if (searchParams.get('batch') === '1') return false;
  const trim = (p: string) => p.replace(/^\/|\/$/g, '');
  let path: string;
  try {
    path = decodeURIComponent(trim(trim(pathname).slice(trim(mount).length)));
  } catch {
    return false; // tRPC refuses the request
  }
  const procedures = router._def.procedures as Record<string, { _def: { type: string } } | undefined>;
  return procedures[path]?._def.type === 'subscription';
}
