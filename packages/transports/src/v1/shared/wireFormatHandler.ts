import type { Context as HonoContext, Handler } from 'hono';
import {
  authConfigured,
  CoreError,
  invoke,
  isAsyncIterable,
  logWireError,
  toWireError,
  type Challenge,
  type GenerateTextOutput,
  type RequestScope,
  type ResolvedConfig,
  type EntryGateway,
  type StreamEvent,
  type TransportName,
  type WireError,
  type WireFormat,
} from '@ai-backend/core/internal';
import { withCorsHeaders } from '../../edge/cors.js';
import { readJsonBody } from '../../edge/readJsonBody.js';
import { closeAfterRefusal, isRefusal, refusalError, type ClosableResponse, type StreamAdmission } from '../../edge/StreamAdmission.js';
import { serveEntry } from '../../edge/serveEntry.js';
import { passedThroughBody } from './chargedUsage.js';

/** An error in a wire format's own shape. */
export interface FormattedError {
  wire: WireError;
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A translated request: the procedure input, and whether the answer streams. */
export interface WireRequest {
  input: Record<string, unknown>;
  stream: boolean;
}

/**
 * One vendor wire format spoken over ai.generateText / ai.streamText (OpenAI Chat Completions,
 * OpenAI Responses, Anthropic Messages): how a body becomes the procedure's input, and how the
 * result, the stream events and errors are written back. Everything else (identity, the access
 * policy, rate limits, validation, prompts, metering) is the procedures', through core's invoke.
 */
export interface WireFormatSpec<R extends WireRequest, W extends { frames(e: StreamEvent): string } = { frames(e: StreamEvent): string }> {
  /** The entry point's name: the calls' scope is opened with it (statistics, recent calls) and logs carry it. */
  transport: TransportName;
  /** The vendor format the body is in: a target that speaks it may be sent the body itself (core's pass-through path). */
  wire: WireFormat;
  parse(body: unknown, headers: Headers, config: ResolvedConfig): R;
  /** `req`, once the body was translated: an invalid field is named as that request wrote it. */
  error(thrown: unknown, req?: R): FormattedError;
  body(result: GenerateTextOutput, req: R): unknown;
  /** A fresh writer per stream: stream events → SSE frames. */
  writer(req: R): W;
  /** The last SSE frame when the stream fails after its headers went out (the writer numbers events where the format does). */
  streamError(e: FormattedError, writer: W): string;
}

/**
 * The official clients (`openai`, `@anthropic-ai/sdk`) repeat every 5xx, twice by default, unless
 * the answer says `x-should-retry: false`. A provider that refused the key, or the request itself
 * (a 4xx other than 408 and 409, which those clients retry), refuses the same request again: our
 * answer for it (the provider's 400 / 404 / 413, or our 502; docs/ai.md#errors) says so, or the
 * client would send a 502 upstream three times and raise the same error a second or two later.
 */
export function repeatRefused(w: WireError): boolean {
  const reason = w.details?.reason;
  if (reason === 'invalid_key') return true;
  return reason === 'upstream_rejected' && w.details?.status !== 408 && w.details?.status !== 409;
}

export function errorResponse(
  c: HonoContext,
  e: FormattedError,
  gateway: EntryGateway | undefined,
  transport: string,
  extraHeaders: Record<string, string> = {},
): Response {
  if (gateway) logWireError(gateway.logger, e.wire, { transport, path: c.req.path });
  return new Response(JSON.stringify(e.body), {
    status: e.status,
    headers: withCorsHeaders(c, {
      'content-type': 'application/json',
      ...(repeatRefused(e.wire) ? { 'x-should-retry': 'false' } : {}),
      ...(e.headers ?? {}),
      ...extraHeaders,
    }),
  });
}

export const jsonResponse = (c: HonoContext, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json', ...headers }) });
/** The body of a /v1 request with its translation (wireFormatHandler). */
type Parsed<R> = R & { body: Record<string, unknown> };
/**
 * An answer on the pass-through path (docs/ai.md#pass-through) is the upstream's bytes, so what
 * the `ai_backend` field says on the other path goes in headers: that path, the call's request id
 * (the ledger's), the `provider/model` that served (after any fallback), and on a non-streamed
 * platform-paid answer the tokens charged.
 */
const passThroughHeaders = (d: { requestId: string; provider: string; model: string }): Record<string, string> => ({
  'x-ai-backend-path': 'pass-through',
  'x-ai-backend-request-id': d.requestId,
  'x-ai-backend-model': `${d.provider}/${d.model}`,
});
/**
 * The call's request id where the official clients read the provider's: `x-request-id` (the
 * `openai` client's `_request_id`) and `request-id` (`@anthropic-ai/sdk`'s). It is the ledger's id,
 * the one `ai_backend.request_id` and `x-ai-backend-request-id` carry.
 */
const requestIdHeaders = (requestId: string): Record<string, string> => ({ 'x-request-id': requestId, 'request-id': requestId });
/** A beta flag list as Anthropic documents it: comma-separated names of letters, digits, `.`, `_` and `-`. */
const ANTHROPIC_BETA = /^[A-Za-z0-9._-]+(\s*,\s*[A-Za-z0-9._-]+)*$/;
/**
 * The caller's headers a pass-through request carries to the provider (docs/ai.md#pass-through):
 * an allow-list, nothing else of the request's headers (its credentials are ours to check, not the
 * provider's). Anthropic Messages: `anthropic-beta` (beta features by name), when it is a plain
 * list of names of at most 500 characters; otherwise it is not sent.
 */
function forwardedHeaders(format: WireFormat, headers: Headers): Record<string, string> | undefined {
  if (format !== 'anthropic-messages') return undefined;
  const beta = headers.get('anthropic-beta');
  return beta && beta.length <= 500 && ANTHROPIC_BETA.test(beta) ? { 'anthropic-beta': beta } : undefined;
}
/** `x-ai-backend-cache: hit|miss` when the response cache was consulted (ai.cache). */
const cacheHeader = (cache: 'hit' | 'miss' | undefined): Record<string, string> => (cache ? { 'x-ai-backend-cache': cache } : {});

/** Read a JSON body within the configured limits, or the error to answer. */
export async function readBody(
  c: HonoContext,
  gateway: EntryGateway,
): Promise<{ ok: true; value: unknown } | { ok: false; error: CoreError }> {
  const { bodyLimit, maxJsonDepth } = gateway.config.limits;
  const body = await readJsonBody(c.req.raw, bodyLimit, maxJsonDepth);
  return body.ok
    ? { ok: true, value: body.value }
    : { ok: false, error: new CoreError(body.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST', body.message) };
}

/**
 * An anonymous call nothing could pay for (no provider key header, no anonymous server-paid
 * calls): signing in is the way on, so a 401 with RFC 6750's challenge instead of the 402.
 */
export function anonymousChallenge(scope: RequestScope, gateway: EntryGateway, error: unknown): Challenge | null {
  if (scope.identity || scope.credentialError || !authConfigured(gateway.config)) return null;
  const w = toWireError(error);
  return w.code === 'PAYMENT_REQUIRED' || w.appCode === 'PAYMENT_REQUIRED' ? scope.challengeFor(null, w.message) : null;
}

/** How one /v1 route reads its call and answers it (see serveV1). */
export interface V1Route<R> {
  transport: TransportName;
  parse: (body: unknown, headers: Headers, config: ResolvedConfig) => R;
  /** The procedure the translated request calls. */
  procedure: (req: R) => string;
  fail: (c: HonoContext, err: unknown, gateway?: EntryGateway, headers?: Record<string, string>) => Response;
  run: (c: HonoContext, scope: RequestScope, req: R, path: string) => Promise<Response>;
}

/**
 * A /v1 call through the one entry sequence (serveEntry): a refused credential is answered before
 * the body is looked at (a 401, not a 400, as the vendors do), then the body within the limits,
 * its translation, the access decision's challenge for the procedure it goes to, the tool-call
 * limit (a 429 in the vendor's shape before anything runs), and the call.
 */
export function serveV1<R>(c: HonoContext, gateway: EntryGateway, route: V1Route<R>): Promise<Response> {
  return serveEntry<{ req: R; path: string }>(c, gateway, {
    transport: route.transport,
    refusals: 'http',
    toolCalls: 'before-dispatch',
    async readCalls(c) {
      const body = await readBody(c, gateway);
      if (!body.ok) return route.fail(c, body.error);
      let req: R;
      try {
        req = route.parse(body.value, c.req.raw.headers, gateway.config);
      } catch (err) {
        if (err instanceof CoreError) return route.fail(c, err);
        throw err;
      }
      const path = route.procedure(req);
      return { calls: [{ kind: 'procedure', path }], parsed: { req, path } };
    },
    refuse: (c, _scope, error, _status, headers) => route.fail(c, error, gateway, headers),
    run: (c, scope, { req, path }) => route.run(c, scope, req, path),
  });
}

/**
 * POST handler of one wire format (see WireFormatSpec). A streamed answer takes a place in the
 * server's stream admission before the call starts (a refused stream costs no upstream call) and
 * keeps it until the response ends.
 */
export function wireFormatHandler<R extends WireRequest, W extends { frames(e: StreamEvent): string }>(
  getGateway: () => Promise<EntryGateway>,
  streams: StreamAdmission,
  spec: WireFormatSpec<R, W>,
): Handler {
  const fail = (c: HonoContext, err: unknown, gateway?: EntryGateway, headers?: Record<string, string>, req?: R) =>
    errorResponse(c, spec.error(err, req), gateway, spec.transport, headers);
  return async (c) => {
    const gateway = await getGateway();
    return serveV1<Parsed<R>>(c, gateway, {
      transport: spec.transport,
      // The body itself travels with its translation: core may forward it (the pass-through path).
      parse: (body, headers, config) => Object.assign(spec.parse(body, headers, config), { body: body as Record<string, unknown> }),
      procedure: (req) => (req.stream ? 'ai.streamText' : 'ai.generateText'),
      fail,
      async run(c, scope, req, path) {
        if (!req.stream) return answer(c, gateway, { scope, req, path });
        const outgoing = (c.env as { outgoing?: ClosableResponse } | undefined)?.outgoing;
        const place = streams.take(scope.facts.ip, scope.identity?.sub);
        if (isRefusal(place)) {
          closeAfterRefusal(outgoing);
          return fail(c, refusalError(place), gateway);
        }
        let res: Response;
        try {
          res = await answer(c, gateway, { scope, req, path });
        } catch (err) {
          place();
          throw err;
        }
        return streams.hold(res, place, outgoing, 'event-stream', scope);
      },
    });
  };

  async function answer(
    c: HonoContext,
    gateway: EntryGateway,
    { scope, req, path }: { scope: RequestScope; req: Parsed<R>; path: string },
  ): Promise<Response> {
    const headers = forwardedHeaders(spec.wire, c.req.raw.headers);
    const wire = { format: spec.wire, body: req.body, stream: req.stream, ...(headers ? { headers } : {}) };
    const result = await invoke(gateway.router, path, req.input, scope.context({ wire }), { stream: true });
    if (!result.ok) {
      const anon = anonymousChallenge(scope, gateway, result.error);
      return anon ? fail(c, anon.error, gateway, anon.headers) : fail(c, result.error, gateway, undefined, req);
    }
    if (!req.stream) {
      const out = result.data as GenerateTextOutput;
      // The pass-through path: the upstream's answer as it came (its usage says the charge when it could not be read).
      if (out.passThrough)
        return new Response(passedThroughBody(spec.wire, out, out.passThrough.body) as Uint8Array<ArrayBuffer>, {
          status: 200,
          headers: withCorsHeaders(c, {
            'content-type': out.passThrough.contentType,
            ...passThroughHeaders(out.data),
            ...requestIdHeaders(out.data.requestId),
            ...(out.tokenUsage ? { 'x-ai-backend-tokens-charged': String(out.tokenUsage.tokensCharged) } : {}),
            ...cacheHeader(out.data.cache),
          }),
        });
      return jsonResponse(c, spec.body(out, req), { ...requestIdHeaders(out.data.requestId), ...cacheHeader(out.data.cache) });
    }
    if (!isAsyncIterable(result.data)) throw new Error('ai.streamText returned no stream');

    const events = (result.data as AsyncIterable<StreamEvent>)[Symbol.asyncIterator]();
    const writer = spec.writer(req);
    const encoder = new TextEncoder();
    // The status line waits for the first event (`start`, sent with the serving target's first
    // output, after any fallbacks): a failure before any output (upstream 429 with its
    // Retry-After, 5xx, timeout) is then an ordinary HTTP error, as the vendors answer it, and
    // not a 200 whose only event is an error. Time to first token is unchanged.
    let first: IteratorResult<StreamEvent>;
    try {
      first = await events.next();
    } catch (err) {
      return fail(c, err, gateway, undefined, req);
    }
    // A pass-through stream (its first event is the upstream's bytes): those bytes go on as they
    // come, and the `finish` event (the engine's result, for statistics) writes nothing.
    const passThrough = !first.done && first.value.type === 'wire';
    const frames = (e: StreamEvent): Uint8Array | undefined => {
      if (e.type !== 'wire') return passThrough ? undefined : encoder.encode(writer.frames(e));
      // Told of the bytes (it writes nothing for them), the writer numbers an error event after them.
      writer.frames(e);
      return e.bytes;
    };
    /**
     * The client cancelled the body. An event read before it may still arrive (the engine settles
     * a finished stream before it ends, and the settle may wait for the store): it has nowhere to
     * go, and writing it to the cancelled stream threw, logged as an internal error.
     */
    let left = false;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) return controller.close();
        const out = frames(first.value);
        if (out) controller.enqueue(out);
      },
      async pull(controller) {
        try {
          // A pass-through `finish` writes nothing: read on, so each pull enqueues or closes.
          for (;;) {
            const next = await events.next();
            if (left) return;
            if (next.done) return controller.close();
            const out = frames(next.value);
            if (out) return controller.enqueue(out);
          }
        } catch (err) {
          if (left) return;
          // Headers are gone: the error travels as the stream's last event.
          const e = spec.error(err, req);
          logWireError(gateway.logger, e.wire, { transport: spec.transport, path: c.req.path });
          controller.enqueue(encoder.encode(spec.streamError(e, writer)));
          controller.close();
        }
      },
      // The client went away: ending the iterator settles what was produced and stops the upstream.
      async cancel() {
        left = true;
        await events.return?.();
      },
    });
    return new Response(stream, {
      status: 200,
      headers: withCorsHeaders(c, {
        'content-type': !first.done && first.value.type === 'wire' ? first.value.contentType : 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        ...(!first.done && first.value.type === 'wire' ? passThroughHeaders(first.value) : {}),
        ...(!first.done && (first.value.type === 'wire' || first.value.type === 'start') ? requestIdHeaders(first.value.requestId) : {}),
        ...cacheHeader(!first.done && first.value.type === 'start' ? first.value.cache : undefined),
      }),
    });
  }
}
