import type { Context as HonoContext, Handler } from 'hono';
import { authConfigured, CoreError, invoke, isAsyncIterable, logWireError, toWireError, type GenerateTextOutput, type Runtime, type StreamEvent } from '@ai-backend/core';
import { withCorsHeaders } from '../http/cors.js';
import { readJsonBody } from '../http/readJsonBody.js';
import { openScope } from '../http/requestContext.js';
import { anthropicError, messageBody, MessageStreamWriter } from './anthropicFormat.js';
import { countTokens, toMessagesInput } from './toMessagesInput.js';

function errorResponse(c: HonoContext, err: unknown, runtime?: Runtime, extraHeaders: Record<string, string> = {}): Response {
  const e = anthropicError(err);
  if (runtime) logWireError(runtime.logger, e.wire, { transport: 'anthropic', path: c.req.path });
  return new Response(JSON.stringify(e.body), { status: e.status, headers: withCorsHeaders(c, { 'content-type': 'application/json', ...(e.headers ?? {}), ...extraHeaders }) });
}

const json = (c: HonoContext, body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });

/**
 * POST /v1/messages: Anthropic's Messages wire format over ai.generateText (`stream` absent or
 * false) and ai.streamText (`stream: true`, Anthropic's event stream). Only the body is
 * translated; identity (Bearer or `x-api-key`), rate limits, validation, prompts and metering
 * are the procedures' own, through core's invoke seam like /v1/chat/completions.
 */
export function messagesHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const scope = await openScope(c, runtime, 'openai');
    const refused = scope.challenge();
    if (refused) return errorResponse(c, refused.error, runtime, refused.headers);
    const { bodyLimit, maxJsonDepth } = runtime.config.limits;
    const body = await readJsonBody(c.req.raw, bodyLimit, maxJsonDepth);
    if (!body.ok) return errorResponse(c, new CoreError(body.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST', body.message));
    let req: ReturnType<typeof toMessagesInput>;
    try {
      req = toMessagesInput(body.value, c.req.raw.headers, runtime.config);
    } catch (err) {
      if (err instanceof CoreError) return errorResponse(c, err);
      throw err;
    }
    const path = req.stream ? 'ai.streamText' : 'ai.generateText';
    const ch = scope.challenge([{ kind: 'procedure', path }]);
    if (ch) return errorResponse(c, ch.error, runtime, ch.headers);
    const result = await invoke(runtime.router, path, req.input, scope.context(), { stream: true });
    if (!result.ok) {
      // An anonymous call nothing could pay for: signing in is the way on (401 with a challenge), as on /v1/chat/completions.
      const w = toWireError(result.error);
      if (!scope.identity && !scope.credentialError && authConfigured(runtime.config) && (w.code === 'PAYMENT_REQUIRED' || w.appCode === 'PAYMENT_REQUIRED')) {
        const anon = scope.challengeFor(null, w.message);
        if (anon) return errorResponse(c, anon.error, runtime, anon.headers);
      }
      return errorResponse(c, result.error, runtime);
    }
    if (!req.stream) return json(c, messageBody(result.data as GenerateTextOutput, req.model));
    if (!isAsyncIterable(result.data)) throw new Error('ai.streamText returned no stream');

    const events = (result.data as AsyncIterable<StreamEvent>)[Symbol.asyncIterator]();
    const writer = new MessageStreamWriter(req.model);
    const encoder = new TextEncoder();
    // The status line waits for the first event (after any fallbacks), so a failure before any
    // output is an ordinary HTTP error in Anthropic's shape, not a 200 whose only event is an error.
    let first: IteratorResult<StreamEvent>;
    try {
      first = await events.next();
    } catch (err) {
      return errorResponse(c, err, runtime);
    }
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) controller.close();
        else controller.enqueue(encoder.encode(writer.frames(first.value)));
      },
      async pull(controller) {
        try {
          const next = await events.next();
          if (next.done) return controller.close();
          controller.enqueue(encoder.encode(writer.frames(next.value)));
        } catch (err) {
          // Headers are gone: Anthropic's `error` event ends the stream.
          const e = anthropicError(err);
          logWireError(runtime.logger, e.wire, { transport: 'anthropic', path: '/v1/messages' });
          controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify(e.body)}\n\n`));
          controller.close();
        }
      },
      // The client went away: ending the iterator settles what was produced and stops the upstream.
      async cancel() {
        await events.return?.();
      },
    });
    return new Response(stream, { status: 200, headers: withCorsHeaders(c, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }) });
  };
}

/**
 * POST /v1/messages/count_tokens: `{ input_tokens }`, the estimate metering reserves for the
 * input (see countTokens). Same identity and access rules as /v1/messages; nothing is charged.
 */
export function countTokensHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const scope = await openScope(c, runtime, 'openai');
    const ch = scope.challenge([{ kind: 'procedure', path: 'ai.generateText' }]);
    if (ch) return errorResponse(c, ch.error, runtime, ch.headers);
    const { bodyLimit, maxJsonDepth } = runtime.config.limits;
    const body = await readJsonBody(c.req.raw, bodyLimit, maxJsonDepth);
    if (!body.ok) return errorResponse(c, new CoreError(body.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST', body.message));
    // count_tokens takes no max_tokens; the translation needs one.
    const value = typeof body.value === 'object' && body.value !== null && !Array.isArray(body.value) ? { max_tokens: 1, ...body.value } : body.value;
    try {
      return json(c, { input_tokens: countTokens(value, runtime.config) });
    } catch (err) {
      return errorResponse(c, err);
    }
  };
}
