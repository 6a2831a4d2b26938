import type { Context as HonoContext, Handler } from 'hono';
import { authConfigured, CoreError, invoke, isAsyncIterable, logWireError, toWireError, type Challenge, type GenerateTextOutput, type RequestScope, type Runtime, type StreamEvent } from '@ai-backend/core';
import { withCorsHeaders } from '../http/cors.js';
import { readJsonBody } from '../http/readJsonBody.js';
import { openScope } from '../http/requestContext.js';
import { ChunkWriter, completionBody, openAiError } from './openAiFormat.js';
import { toChatInput } from './toChatInput.js';

function errorResponse(c: HonoContext, err: unknown, runtime?: Runtime, extraHeaders: Record<string, string> = {}): Response {
  const e = openAiError(err);
  if (runtime) logWireError(runtime.logger, e.wire, { transport: 'openai', path: c.req.path });
  return new Response(JSON.stringify(e.body), { status: e.status, headers: withCorsHeaders(c, { 'content-type': 'application/json', ...(e.headers ?? {}), ...extraHeaders }) });
}

/**
 * The 401 that tells an OpenAI client to present a credential, with RFC 6750's
 * `WWW-Authenticate` (core's challenge): a refused token, an anonymous call the access policy
 * refuses, and an anonymous call that nothing could pay for (no provider key header, no
 * anonymous server-paid calls), where signing in is the way on.
 */
function challengeResponse(c: HonoContext, runtime: Runtime, ch: Challenge): Response {
  return errorResponse(c, ch.error, runtime, ch.headers);
}

function refusedAnonymous(scope: RequestScope, runtime: Runtime, error: unknown): Challenge | null {
  if (scope.identity || scope.credentialError || !authConfigured(runtime.config)) return null;
  const w = toWireError(error);
  return w.code === 'PAYMENT_REQUIRED' || w.appCode === 'PAYMENT_REQUIRED' ? scope.challengeFor(null, w.message) : null;
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
    // A refused credential is answered before the body is looked at, as OpenAI does: a 401, not a 400.
    const scope = await openScope(c, runtime, 'openai');
    const refused = scope.challenge();
    if (refused) return challengeResponse(c, runtime, refused);
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
    const path = req.stream ? 'ai.streamText' : 'ai.generateText';
    const ch = scope.challenge([{ kind: 'procedure', path }]);
    if (ch) return challengeResponse(c, runtime, ch);
    const result = await invoke(runtime.router, path, req.input, scope.context(), { stream: true });
    if (!result.ok) {
      const anonymous = refusedAnonymous(scope, runtime, result.error);
      return anonymous ? challengeResponse(c, runtime, anonymous) : errorResponse(c, result.error, runtime);
    }
    if (!req.stream) return new Response(JSON.stringify(completionBody(result.data as GenerateTextOutput, req.model)), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });
    if (!isAsyncIterable(result.data)) throw new Error('ai.streamText returned no stream');

    const events = (result.data as AsyncIterable<StreamEvent>)[Symbol.asyncIterator]();
    const writer = new ChunkWriter(req.model, req.includeUsage);
    const encoder = new TextEncoder();
    // The status line waits for the first event (`start`, sent with the serving target's first
    // output, after any fallbacks): a failure before any output (upstream 429 with its
    // Retry-After, 5xx, timeout) is then an ordinary HTTP error, as OpenAI answers it, and not a
    // 200 whose only event is an error. Time to first token is unchanged.
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

type ModelEntry = { id: string; object: 'model'; created: number; owned_by: string };

/** The models the caller may use: `provider/model` ids the server allows, plus the configured aliases. */
async function allowedModels(c: HonoContext, runtime: Runtime): Promise<ModelEntry[] | Response> {
  const scope = await openScope(c, runtime, 'openai');
  const ch = scope.challenge([{ kind: 'procedure', path: 'ai.listAllowedModels' }]);
  if (ch) return challengeResponse(c, runtime, ch);
  const result = await invoke(runtime.router, 'ai.listAllowedModels', undefined, scope.context());
  if (!result.ok) return errorResponse(c, result.error, runtime);
  const created = Math.floor(Date.now() / 1000);
  const byProvider = (result.data as { models: Record<string, string[]> }).models;
  const data = Object.entries(byProvider).flatMap(([provider, models]) => models.map((m): ModelEntry => ({ id: `${provider}/${m}`, object: 'model', created, owned_by: provider })));
  for (const [alias, target] of Object.entries(runtime.config.ai.aliases)) data.push({ id: alias, object: 'model', created, owned_by: target.split('/')[0]! });
  return data;
}

const json = (c: HonoContext, body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });

/** GET /v1/models: `provider/model` ids the server allows, plus the configured aliases. */
export function modelsHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const data = await allowedModels(c, await getRuntime());
    return data instanceof Response ? data : json(c, { object: 'list', data });
  };
}

/**
 * GET /v1/models/{id} (the `openai` client's `models.retrieve`): one entry of the list; the id
 * keeps its slashes (`openai/gpt-4.1-mini`, `openrouter/openai/gpt-5-mini`).
 */
export function modelHandler(getRuntime: () => Promise<Runtime>): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    const data = await allowedModels(c, runtime);
    if (data instanceof Response) return data;
    const id = decodeURIComponent(c.req.path.slice('/v1/models/'.length));
    const entry = data.find((m) => m.id === id);
    if (entry) return json(c, entry);
    return errorResponse(c, new CoreError('NOT_FOUND', `the model '${id.slice(0, 300)}' does not exist or is not allowed`, { details: { param: 'model' } }));
  };
}

/** Any other path under /v1: OpenAI's error shape, so OpenAI clients report it as such. */
export function openAiNotFound(): Handler {
  return (c) => errorResponse(c, new CoreError('NOT_FOUND', `no route ${c.req.method} ${c.req.path.slice(0, 200)} on the OpenAI-compatible endpoint (POST /v1/chat/completions, GET /v1/models)`));
}
