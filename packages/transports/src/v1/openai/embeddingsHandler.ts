import type { Handler } from 'hono';
import { CoreError, invoke, type EmbedOutput, type EntryGateway } from '@ai-backend/core/internal';
import { anonymousChallenge, errorResponse, jsonResponse, serveV1 } from '../shared/wireFormatHandler.js';
import { openAiError } from './openAiFormat.js';
import { assertModelField, PROVIDER_KEY_HEADER } from './toChatInput.js';

type Json = Record<string, unknown>;
const bad = (message: string, param: string) => new CoreError('INVALID_PARAMS', message, { details: { reason: 'invalid_request', param } });

/** A vector as OpenAI's `encoding_format: 'base64'` sends it: little-endian float32 bytes. */
function base64Vector(v: number[]): string {
  return Buffer.from(new Float32Array(v).buffer).toString('base64');
}

/** An OpenAI embeddings request → ai.embed's input. */
function toEmbedInput(body: unknown, headers: Headers): { input: Json; base64: boolean; model: string } {
  const b = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Json) : undefined;
  if (!b) throw bad('the body must be a JSON object', 'body');
  assertModelField(b.model, 'model is required: provider/model or a configured alias', bad);
  const okInput =
    typeof b.input === 'string' || (Array.isArray(b.input) && b.input.length > 0 && b.input.every((x) => typeof x === 'string'));
  if (!okInput) throw bad('input must be a string or a non-empty array of strings (token arrays are not supported)', 'input');
  if (b.encoding_format !== undefined && b.encoding_format !== null && b.encoding_format !== 'float' && b.encoding_format !== 'base64')
    throw bad("encoding_format must be 'float' or 'base64'", 'encoding_format');
  const input: Json = { model: b.model, input: b.input };
  // A `dimensions: "256"` must not quietly get vectors of the model's full length: non-null
  // values go to ai.embed's schema, which names the field (as a number out of range).
  if (b.dimensions !== undefined && b.dimensions !== null) input.dimensions = b.dimensions;
  const key = headers.get(PROVIDER_KEY_HEADER);
  if (key) input.apiKey = key;
  if (typeof b.user === 'string') input.metadata = { name: b.user.slice(0, 200), type: 'openai-embeddings' };
  return { input, base64: b.encoding_format === 'base64', model: b.model };
}

/**
 * POST /v1/embeddings: OpenAI's embeddings wire format over ai.embed (same identity, limits
 * and metering), for every provider with embedding models. `encoding_format: 'base64'` (the
 * `openai` client's default) is answered as OpenAI does.
 */
export function embeddingsHandler(getGateway: () => Promise<EntryGateway>): Handler {
  const fail = (c: Parameters<Handler>[0], err: unknown, gateway?: EntryGateway, headers?: Record<string, string>) =>
    errorResponse(c, openAiError(err), gateway, 'openai', headers);
  return async (c) => {
    const gateway = await getGateway();
    return serveV1(c, gateway, {
      transport: 'openai',
      parse: (body, headers) => toEmbedInput(body, headers),
      procedure: () => 'ai.embed',
      fail,
      run: async (c, scope, req) => {
        const result = await invoke(gateway.router, 'ai.embed', req.input, scope.context());
        if (!result.ok) {
          const anon = anonymousChallenge(scope, gateway, result.error);
          return anon ? fail(c, anon.error, gateway, anon.headers) : fail(c, result.error, gateway);
        }
        return embeddingsBody(c, result.data as EmbedOutput, req);
      },
    });
  };
}

/** ai.embed's result in OpenAI's shape. */
function embeddingsBody(c: Parameters<Handler>[0], r: EmbedOutput, req: { base64: boolean; model: string }): Response {
  const tokens = r.data.usage.inputTokens ?? r.tokenUsage?.tokensUsed ?? r.usageInfo?.tokensUsed ?? 0;
  return jsonResponse(c, {
    object: 'list',
    data: r.data.embeddings.map((e, index) => ({ object: 'embedding', index, embedding: req.base64 ? base64Vector(e) : e })),
    model: req.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
    ai_backend: {
      provider: r.data.provider,
      model: r.data.model,
      request_id: r.data.requestId,
      ...(r.tokenUsage ? { token_usage: r.tokenUsage } : {}),
      ...(r.usageInfo ? { usage_info: r.usageInfo } : {}),
    },
  });
}
