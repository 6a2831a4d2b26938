import type { Context as HonoContext, Handler } from 'hono';
import { CoreError, invoke, isAsyncIterable, logWireError, type GenerateTextOutput, type Runtime, type StreamEvent } from '@ai-backend/core';
import { withCorsHeaders } from '../http/cors.js';
import { readJsonBody } from '../http/readJsonBody.js';
import { openScope } from '../http/requestContext.js';
import { ChunkWriter, completionBody, openAiError } from './openAiFormat.js';
import { toChatInput } from './toChatInput.js';

function errorResponse(c: HonoContext, err: unknown, runtime?: Runtime): Response {
  const e = openAiError(err);
  if (runtime) logWireError(runtime.logger, e.wire, { transport: 'openai', path: c.req.path });
  return new Response(JSON.stringify(e.body), { status: e.status, headers: withCorsHeaders(c, { 'content-type': 'application/json', ...(e.headers ?? {}) }) });
}

/**
 * POST /v1/chat/completions: the OpenAI Chat Completions wire format over ai.generateText
 * (`stream` absent or false) and ai.streamText (`stream: true`, server-sent events). The body
 * is only translated; identity, rate limits, input validation, prompts and metering are the
 * procedures' own, reached through core's invoke seam like /rpc and /mcp.
 */
export function chatCompletionsHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const { bodyLimit, maxJsonDepth } = runtime.config.limits;
    const body = await readJsonBody(c.req.raw, bodyLimit, maxJsonDepth);
    if (!body.ok) return errorResponse(c, new CoreError(body.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST', body.message));
    let req: ReturnType<typeof toChatInput>;
    try {
      req = toChatInput(body.value, c.req.raw.headers, runtime.config);
    } catch (err) {
      if (err instanceof CoreError) return errorResponse(c, err);
      throw err;
    }
    const ctx = (await openScope(c, runtime, 'openai')).context();
    const result = await invoke(runtime.router, req.stream ? 'ai.streamText' : 'ai.generateText', req.input, ctx, { stream: true });
    if (!result.ok) return errorResponse(c, result.error, runtime);
    if (!req.stream) return new Response(JSON.stringify(completionBody(result.data as GenerateTextOutput, req.model)), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });
    if (!isAsyncIterable(result.data)) throw new Error('ai.streamText returned no stream');

    const events = (result.data as AsyncIterable<StreamEvent>)[Symbol.asyncIterator]();
    const writer = new ChunkWriter(req.model, req.includeUsage);
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await events.next();
          if (next.done) return controller.close();
          controller.enqueue(encoder.encode(writer.frames(next.value)));
        } catch (err) {
          // Headers are gone: the error travels as a final event, as OpenAI does mid-stream.
          const e = openAiError(err);
          logWireError(runtime.logger, e.wire, { transport: 'openai', path: '/v1/chat/completions' });
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(e.body)}\n\n`));
          controller.close();
        }
      },
      // The client went away: ending the iterator settles what was produced and stops the upstream.
      async cancel() {
        await events.return?.();
      },
    });
    return new Response(stream, {
      status: 200,
      headers: withCorsHeaders(c, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }),
    });
  };
}

/** GET /v1/models: `provider/model` ids the server allows, plus the configured aliases. */
export function modelsHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const ctx = (await openScope(c, runtime, 'openai')).context();
    const result = await invoke(runtime.router, 'ai.listAllowedModels', undefined, ctx);
    if (!result.ok) return errorResponse(c, result.error, runtime);
    const created = Math.floor(Date.now() / 1000);
    const byProvider = (result.data as { models: Record<string, string[]> }).models;
    const data = Object.entries(byProvider).flatMap(([provider, models]) => models.map((m) => ({ id: `${provider}/${m}`, object: 'model', created, owned_by: provider })));
    for (const [alias, target] of Object.entries(runtime.config.ai.aliases)) data.push({ id: alias, object: 'model', created, owned_by: target.split('/')[0]! });
    return new Response(JSON.stringify({ object: 'list', data }), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });
  };
}
