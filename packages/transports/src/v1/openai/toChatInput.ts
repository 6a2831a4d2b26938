import { CoreError, modelInputFields, type ChatMessage, type ResolvedConfig } from '@ai-backend/core/internal';
import type { FieldNaming } from './openAiFormat.js';

/** The BYOK header of the OpenAI-compatible endpoint: the caller's own provider key. */
export const PROVIDER_KEY_HEADER = 'x-provider-api-key';
/** The response cache per request (`ai.cache`): `on` or `off`; answers say `hit` or `miss` in it. */
export const CACHE_HEADER = 'x-ai-backend-cache';

/**
 * What a /v1 request says of the response cache: `x-ai-backend-cache: on|off`, or HTTP's own
 * `cache-control`: `no-store` neither reads nor stores, `no-cache` skips the lookup and stores
 * the fresh answer (`refresh`). Undefined: the server's default (ai.cache.perRequest).
 */
export function cacheDirective(headers: Headers): 'on' | 'off' | 'refresh' | undefined {
  const own = headers.get(CACHE_HEADER)?.trim().toLowerCase();
  if (own === 'on' || own === 'off') return own;
  const cc = headers.get('cache-control')?.toLowerCase() ?? '';
  if (/(^|,)\s*no-store\s*(,|$)/.test(cc)) return 'off';
  if (/(^|,)\s*no-cache\s*(,|$)/.test(cc)) return 'refresh';
  return undefined;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
/** The longest `model` a /v1 request may name (a route, alias or `provider/model` id is far shorter). */
const MODEL_MAX_CHARS = 300;

/**
 * A /v1 request's `model` field is a name (every wire format's one check): a name longer than any
 * model's is refused as what it is, a missing or empty one with `required`, the format's wording.
 */
export function assertModelField(
  model: unknown,
  required: string,
  bad: (message: string, param: string) => Error,
): asserts model is string {
  if (typeof model === 'string' && model.length > MODEL_MAX_CHARS)
    throw bad(`model is at most ${MODEL_MAX_CHARS} characters (got ${model.length})`, 'model');
  if (typeof model !== 'string' || model.length === 0) throw bad(required, 'model');
}

const bad = (message: string, param?: string) =>
  new CoreError('INVALID_PARAMS', message, { details: { reason: 'invalid_request', ...(param ? { param } : {}) } });

/**
 * A tool's JSON Schema as the request gave it: absent means no parameters (an empty object, as
 * OpenAI reads it); anything else that is not an object is refused, naming the field, rather than
 * replaced by "no parameters", which would change what the model is told it can call.
 */
export function toolSchema(schema: unknown, param: string): Json {
  if (schema === undefined || schema === null) return { type: 'object', properties: {} };
  const s = obj(schema);
  if (!s) throw bad(`${param} must be a JSON Schema object`, param);
  return s;
}

/** What the endpoint hands to ai.generateText / ai.streamText, plus how to answer. */
export interface ChatRequest {
  input: Record<string, unknown>;
  /** The `model` string as the client sent it (echoed in the answer). */
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** Set when the request limits its output with `max_completion_tokens`: errors name that field. */
  naming?: FieldNaming;
}

function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (obj(p)?.type === 'text' && typeof obj(p)!.text === 'string' ? (obj(p)!.text as string) : '')).join('');
  if (content === null || content === undefined) return '';
  throw bad(`${param} must be a string or an array of text parts`, param);
}

function userParts(content: unknown, param: string): ChatMessage & { role: 'user' } {
  if (typeof content === 'string') return { role: 'user', content };
  if (!Array.isArray(content)) throw bad(`${param} must be a string or an array of parts`, param);
  return {
    role: 'user',
    content: content.map((raw, i) => {
      const p = obj(raw) ?? {};
      if (p.type === 'text' && typeof p.text === 'string') return { type: 'text' as const, text: p.text };
      if (p.type === 'image_url' && typeof obj(p.image_url)?.url === 'string')
        return { type: 'image' as const, image: obj(p.image_url)!.url as string };
      const file = obj(p.file);
      if (p.type === 'file' && typeof file?.file_data === 'string') {
        const data = file.file_data;
        const mediaType = /^data:([^;,]+)/.exec(data)?.[1] ?? 'application/pdf';
        return { type: 'file' as const, data, mediaType, ...(typeof file.filename === 'string' ? { filename: file.filename } : {}) };
      }
      throw bad(`${param}[${i}]: supported parts are text, image_url and file (file_data)`, `${param}[${i}]`);
    }),
  };
}

/**
 * An OpenAI Chat Completions request → the input of ai.generateText / ai.streamText. Only the
 * shape is translated here; every rule (limits, models, prompts, payer) is the procedure's.
 */
export function toChatInput(body: unknown, headers: Headers, config: ResolvedConfig): ChatRequest {
  const b = obj(body);
  if (!b) throw bad('the body must be a JSON object');
  assertModelField(b.model, 'model is required: provider/model or a configured alias', bad);
  if (!Array.isArray(b.messages) || b.messages.length === 0) throw bad('messages must be a non-empty array', 'messages');
  if (b.n !== undefined && b.n !== null && b.n !== 1) throw bad('only n = 1 is supported', 'n');
  // Fields that change the answer's shape are checked, not guessed: a `stream: "true"` must not
  // quietly get a JSON answer, nor an unknown response_format a free-text one.
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') throw bad('stream must be a boolean', 'stream');
  if (b.stream_options !== undefined && b.stream_options !== null && !obj(b.stream_options))
    throw bad('stream_options must be an object', 'stream_options');
  const includeUsage = obj(b.stream_options)?.include_usage;
  if (includeUsage !== undefined && includeUsage !== null && typeof includeUsage !== 'boolean')
    throw bad('stream_options.include_usage must be a boolean', 'stream_options.include_usage');
  if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) throw bad('tools must be an array of function tools', 'tools');
  const tcIn = b.tool_choice;
  if (
    tcIn !== undefined &&
    tcIn !== null &&
    tcIn !== 'auto' &&
    tcIn !== 'none' &&
    tcIn !== 'required' &&
    !(obj(tcIn)?.type === 'function' && typeof obj(obj(tcIn)!.function)?.name === 'string')
  ) {
    throw bad("tool_choice must be 'auto', 'none', 'required' or { type: 'function', function: { name } }", 'tool_choice');
  }
  const rfIn = b.response_format;
  if (rfIn !== undefined && rfIn !== null && !['text', 'json_object', 'json_schema'].includes(obj(rfIn)?.type as string)) {
    throw bad("response_format.type must be 'text', 'json_object' or 'json_schema'", 'response_format');
  }
  if (obj(rfIn)?.type === 'json_schema') {
    const js = obj(obj(rfIn)!.json_schema);
    if (!js) throw bad('response_format.json_schema must be an object with name and schema', 'response_format.json_schema');
    if (js.schema !== undefined && js.schema !== null && !obj(js.schema))
      throw bad('response_format.json_schema.schema must be a JSON Schema object', 'response_format.json_schema.schema');
  }
  const fields = modelInputFields(config, b.model);

  // OpenAI tool messages name only the call id; the tool name comes from the assistant's call.
  const toolNames = new Map<string, string>();
  const messages: ChatMessage[] = b.messages.map((raw, i): ChatMessage => {
    const m = obj(raw) ?? {};
    const param = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textOf(m.content, `${param}.content`) };
      case 'user':
        return userParts(m.content, `${param}.content`);
      case 'assistant': {
        const text = textOf(m.content, `${param}.content`);
        const calls = Array.isArray(m.tool_calls) ? m.tool_calls.map((c) => obj(c) ?? {}) : [];
        if (calls.length === 0) return { role: 'assistant', content: text };
        return {
          role: 'assistant',
          content: [
            ...(text ? [{ type: 'text' as const, text }] : []),
            ...calls.map((c) => {
              const f = obj(c.function) ?? {};
              if (typeof c.id !== 'string' || typeof f.name !== 'string') throw bad(`${param}.tool_calls need id and function.name`, param);
              toolNames.set(c.id, f.name);
              let input: unknown = {};
              try {
                input = typeof f.arguments === 'string' && f.arguments ? JSON.parse(f.arguments) : {};
              } catch {
                throw bad(`${param}.tool_calls: function.arguments is not JSON`, param);
              }
              return { type: 'tool-call' as const, toolCallId: c.id, toolName: f.name, input };
            }),
          ],
        };
      }
      case 'tool': {
        if (typeof m.tool_call_id !== 'string') throw bad(`${param}.tool_call_id is required`, param);
        const toolName = toolNames.get(m.tool_call_id);
        if (!toolName) throw bad(`${param}.tool_call_id does not match an earlier assistant tool call`, param);
        return {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: m.tool_call_id, toolName, output: textOf(m.content, `${param}.content`) }],
        };
      }
      default:
        throw bad(`${param}.role must be system, developer, user, assistant or tool`, param);
    }
  });

  // The procedures' `provider` is the spec's enum of four; a named provider or a route goes as a model reference.
  const input: Record<string, unknown> = { ...fields.input, messages };
  const options: Record<string, unknown> = { ...fields.options };
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  if (maxTokens !== undefined && maxTokens !== null) options.maxTokens = maxTokens;
  if (b.temperature !== undefined && b.temperature !== null) options.temperature = b.temperature;
  Object.assign(options, samplingOptions(b));
  if (Object.keys(options).length) input.options = options;

  if (Array.isArray(b.tools) && b.tools.length > 0) {
    input.tools = b.tools.map((t, i) => {
      const f = obj(obj(t)?.function);
      if (obj(t)?.type !== 'function' || !f) throw bad(`tools[${i}] must be a function tool`, `tools[${i}]`);
      return {
        name: f.name,
        ...(typeof f.description === 'string' ? { description: f.description } : {}),
        parameters: toolSchema(f.parameters, `tools[${i}].function.parameters`),
      };
    });
  }
  const tc = b.tool_choice;
  if (tc === 'auto' || tc === 'none' || tc === 'required') input.toolChoice = tc;
  else if (obj(tc)?.type === 'function') input.toolChoice = { type: 'tool', toolName: obj(obj(tc)!.function)?.name };

  const rf = obj(b.response_format);
  if (rf?.type === 'json_schema') {
    const js = obj(rf.json_schema) ?? {};
    input.output = {
      type: 'json',
      schema: obj(js.schema) ?? {},
      ...(typeof js.name === 'string' ? { name: js.name } : {}),
      ...(typeof js.description === 'string' ? { description: js.description } : {}),
    };
  } else if (rf?.type === 'json_object') {
    input.output = { type: 'json', schema: { type: 'object' } };
  }
  // Fallbacks as OpenRouter's API takes them: `models`, tried in order after `model` fails
  // (429, 5xx, timeout, connection error). The procedure validates each entry.
  if (b.models !== undefined) {
    if (!Array.isArray(b.models) || !b.models.every((m) => typeof m === 'string'))
      throw bad('models must be an array of provider/model strings or aliases', 'models');
    input.fallbacks = (b.models as string[]).filter((m) => m !== b.model);
  }
  const key = headers.get(PROVIDER_KEY_HEADER);
  if (key) input.apiKey = key;
  const cache = cacheDirective(headers);
  if (cache) input.cache = cache;
  if (typeof b.user === 'string') input.metadata = { name: b.user.slice(0, 200), type: 'openai-compatible' };

  return {
    input,
    model: b.model,
    stream: b.stream === true,
    includeUsage: obj(b.stream_options)?.include_usage === true,
    ...(b.max_completion_tokens !== undefined && b.max_completion_tokens !== null
      ? { naming: { names: { 'options.maxTokens': 'max_completion_tokens' } } }
      : {}),
  };
}

/**
 * `top_p`, `stop` (a string or up to four) and `seed` of an OpenAI request, as the procedures'
 * options (`topP`, `stopSequences`, `seed`); `null` means "not set". Values of the wrong type are
 * left to the procedure's schema, which names the field.
 */
export function samplingOptions(b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (b.top_p !== undefined && b.top_p !== null) out.topP = b.top_p;
  if (typeof b.stop === 'string') out.stopSequences = [b.stop];
  else if (b.stop !== undefined && b.stop !== null) out.stopSequences = b.stop;
  if (b.seed !== undefined && b.seed !== null) out.seed = b.seed;
  return out;
}
