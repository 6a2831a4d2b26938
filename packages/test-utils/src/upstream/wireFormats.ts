/**
 * Request parsing and reply bodies of the four upstream wire formats, as the AI SDK providers
 * send and read them. Only the fields the SDK needs are produced; the shapes follow the
 * providers' public API references (OpenAI Responses and Chat Completions, Anthropic Messages,
 * Google generateContent, OpenRouter chat completions).
 */

/**
 * `mistral`: Mistral's chat API (OpenAI-like bodies; its own stream ends and error shape).
 * `bedrock`: Amazon Bedrock's Converse API (`POST /model/<id>/converse`, and `/converse-stream`
 * answered in AWS's binary event-stream encoding).
 */
export type WireFormat = 'openai-responses' | 'openai-chat' | 'anthropic' | 'google' | 'openrouter' | 'mistral' | 'bedrock';

/** What the test upstream reads out of a generation request, whatever its format. */
export interface ParsedPrompt {
  model: string;
  /** Concatenated system/developer instructions ('' when none). */
  system: string;
  /** Concatenated user text. */
  content: string;
  maxTokens: number | undefined;
  temperature: number | undefined;
}

type Json = Record<string, unknown>;

/** Text of a message `content`: a string, or an array of text parts in any of the formats. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof part === 'object' && part !== null && typeof (part as Json).text === 'string' ? ((part as Json).text as string) : '',
      )
      .join('');
  }
  return '';
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** Parse a generation request body of the given format. */
export function parsePrompt(format: WireFormat, body: Json, modelFromPath?: string): ParsedPrompt {
  const system: string[] = [];
  const content: string[] = [];
  switch (format) {
    case 'openai-responses': {
      // `input` is a string (one user message) or a list of items.
      const input =
        typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? (body.input as Json[]) : [];
      if (typeof body.instructions === 'string') system.push(body.instructions);
      for (const m of input) (m.role === 'system' || m.role === 'developer' ? system : content).push(textOf(m.content));
      return {
        model: String(body.model ?? ''),
        system: system.join('\n'),
        content: content.join('\n'),
        maxTokens: num(body.max_output_tokens),
        temperature: num(body.temperature),
      };
    }
    case 'openai-chat':
    case 'openrouter':
    case 'mistral': {
      const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
      for (const m of messages) (m.role === 'system' || m.role === 'developer' ? system : content).push(textOf(m.content));
      return {
        model: String(body.model ?? ''),
        system: system.join('\n'),
        content: content.join('\n'),
        maxTokens: num(body.max_completion_tokens) ?? num(body.max_tokens),
        temperature: num(body.temperature),
      };
    }
    case 'anthropic': {
      const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
      system.push(textOf(body.system));
      for (const m of messages) content.push(textOf(m.content));
      return {
        model: String(body.model ?? ''),
        system: system.join(''),
        content: content.join('\n'),
        maxTokens: num(body.max_tokens),
        temperature: num(body.temperature),
      };
    }
    case 'bedrock': {
      const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
      system.push(textOf(body.system));
      for (const m of messages) content.push(textOf(m.content));
      const ic = (body.inferenceConfig ?? {}) as Json;
      return {
        model: modelFromPath ?? '',
        system: system.join(''),
        content: content.join('\n'),
        maxTokens: num(ic.maxTokens),
        temperature: num(ic.temperature),
      };
    }
    case 'google': {
      const contents = Array.isArray(body.contents) ? (body.contents as Json[]) : [];
      const si = body.systemInstruction as Json | undefined;
      if (si) system.push(textOf(si.parts));
      for (const c of contents) content.push(textOf(c.parts));
      const gc = (body.generationConfig ?? {}) as Json;
      return {
        model: modelFromPath ?? '',
        system: system.join(''),
        content: content.join('\n'),
        maxTokens: num(gc.maxOutputTokens),
        temperature: num(gc.temperature),
      };
    }
  }
}

export interface ReplyParts {
  model: string;
  text: string;
  inputTokens: number;
  outputTokens: number;
  /** True when the reply stopped at maxTokens. */
  truncated: boolean;
  /**
   * The request's stop sequence the reply stopped on (ReplyContent): Anthropic says
   * `stop_reason: 'stop_sequence'` and names it, Bedrock says `stopReason: 'stop_sequence'`; OpenAI
   * (`finish_reason: 'stop'`) and Google (`finishReason: 'STOP'`) answer as for any other stop.
   */
  stopSequence?: string;
  /** Leave usage numbers out (a provider that does not report them). */
  omitUsage: boolean;
  /**
   * Input tokens (of `inputTokens`) reported as read from the provider's prompt cache, each format
   * its way (usageOf): OpenAI Chat's and OpenRouter's `prompt_tokens_details.cached_tokens`, the
   * Responses API's `input_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`,
   * Google's `cachedContentTokenCount`. Default none.
   */
  cachedTokens?: number;
  /** Answer with this tool call instead of text. */
  toolCall?: { id: string; name: string; input: Record<string, unknown> };
}

/** Anthropic's `stop_reason` and `stop_sequence` for a reply. */
export function anthropicStop(r: ReplyParts): { stop_reason: string; stop_sequence: string | null } {
  if (r.toolCall) return { stop_reason: 'tool_use', stop_sequence: null };
  if (r.stopSequence !== undefined) return { stop_reason: 'stop_sequence', stop_sequence: r.stopSequence };
  return { stop_reason: r.truncated ? 'max_tokens' : 'end_turn', stop_sequence: null };
}

let seq = 0;
const nextId = (prefix: string) => `${prefix}_test${(++seq).toString(36)}`;

/** A Responses API message item: `content` empty while in progress, its one output_text part once done. */
export function responsesMessageItem(id: string, text: string, status: 'in_progress' | 'completed'): Json {
  return {
    type: 'message',
    id,
    status,
    role: 'assistant',
    content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

/** A Responses API function_call item (`arguments` empty while in progress). */
export function responsesCallItem(id: string, call: NonNullable<ReplyParts['toolCall']>, status: 'in_progress' | 'completed'): Json {
  return {
    type: 'function_call',
    id,
    call_id: call.id,
    name: call.name,
    arguments: status === 'in_progress' ? '' : JSON.stringify(call.input),
    status,
  };
}

/**
 * A Responses API `Response` object with every field OpenAI sends (the body of a plain answer, and
 * the `response` of the stream's lifecycle events: `output` empty and `usage` null until the end),
 * so a client that rebuilds the response from the events (the openai package's accumulator) gets
 * what it gets from OpenAI.
 */
export function responsesObject(id: string, created: number, r: ReplyParts, status: string, output: Json[]): Json {
  const done = status === 'completed' || status === 'incomplete';
  return {
    id,
    object: 'response',
    created_at: created,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    model: r.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: false,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_logprobs: 0,
    top_p: 1,
    truncation: 'disabled',
    usage:
      done && !r.omitUsage
        ? {
            input_tokens: r.inputTokens,
            input_tokens_details: { cached_tokens: r.cachedTokens ?? 0 },
            output_tokens: r.outputTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: r.inputTokens + r.outputTokens,
          }
        : null,
    user: null,
    metadata: {},
  };
}

/** OpenAI Chat's (and OpenRouter's, Mistral's) usage, with the prompt's cached part when there is one. */
export function chatUsageOf(r: ReplyParts): Json {
  return {
    prompt_tokens: r.inputTokens,
    completion_tokens: r.outputTokens,
    total_tokens: r.inputTokens + r.outputTokens,
    ...(r.cachedTokens ? { prompt_tokens_details: { cached_tokens: r.cachedTokens } } : {}),
  };
}

/** Anthropic's input counts: `input_tokens` is the uncached part, cache reads apart. */
export function anthropicInputOf(r: ReplyParts): Json {
  const reads = r.cachedTokens ?? 0;
  return { input_tokens: r.inputTokens - reads, ...(reads ? { cache_read_input_tokens: reads } : {}) };
}

/** Google's `usageMetadata`: `promptTokenCount` includes the cached part, `cachedContentTokenCount`. */
export function googleUsageOf(r: ReplyParts): Json {
  return {
    promptTokenCount: r.inputTokens,
    candidatesTokenCount: r.outputTokens,
    totalTokenCount: r.inputTokens + r.outputTokens,
    ...(r.cachedTokens ? { cachedContentTokenCount: r.cachedTokens } : {}),
  };
}

/** A successful reply body in the given format. */
export function replyBody(format: WireFormat, r: ReplyParts): Json {
  const created = Math.floor(Date.now() / 1000);
  const total = r.inputTokens + r.outputTokens;
  switch (format) {
    case 'openai-responses': {
      const output = r.toolCall
        ? [responsesCallItem(nextId('fc'), r.toolCall, 'completed')]
        : [responsesMessageItem(nextId('msg'), r.text, 'completed')];
      return responsesObject(nextId('resp'), created, r, r.truncated ? 'incomplete' : 'completed', output);
    }
    case 'openai-chat':
    case 'openrouter':
    case 'mistral':
      return {
        id: nextId('chatcmpl'),
        object: 'chat.completion',
        created,
        model: r.model,
        choices: [
          r.toolCall
            ? {
                index: 0,
                message: {
                  role: 'assistant',
                  content: null,
                  tool_calls: [
                    {
                      id: r.toolCall.id,
                      type: 'function',
                      function: { name: r.toolCall.name, arguments: JSON.stringify(r.toolCall.input) },
                    },
                  ],
                },
                finish_reason: 'tool_calls',
              }
            : { index: 0, message: { role: 'assistant', content: r.text }, finish_reason: r.truncated ? 'length' : 'stop' },
        ],
        ...(r.omitUsage ? {} : { usage: chatUsageOf(r) }),
      };
    case 'anthropic':
      return {
        id: nextId('msg'),
        type: 'message',
        role: 'assistant',
        model: r.model,
        content: r.toolCall
          ? [{ type: 'tool_use', id: r.toolCall.id, name: r.toolCall.name, input: r.toolCall.input }]
          : [{ type: 'text', text: r.text }],
        ...anthropicStop(r),
        // The Messages API always reports usage (the SDK's schema requires it), so omitUsage does not apply.
        usage: { ...anthropicInputOf(r), output_tokens: r.outputTokens },
      };
    case 'bedrock':
      return {
        output: {
          message: {
            role: 'assistant',
            content: r.toolCall
              ? [{ toolUse: { toolUseId: r.toolCall.id, name: r.toolCall.name, input: r.toolCall.input } }]
              : [{ text: r.text }],
          },
        },
        stopReason: anthropicStop(r).stop_reason,
        ...(r.omitUsage ? {} : { usage: { inputTokens: r.inputTokens, outputTokens: r.outputTokens, totalTokens: total } }),
        metrics: { latencyMs: 1 },
      };
    case 'google':
      return {
        candidates: [
          {
            content: {
              parts: [r.toolCall ? { functionCall: { name: r.toolCall.name, args: r.toolCall.input } } : { text: r.text }],
              role: 'model',
            },
            finishReason: r.truncated ? 'MAX_TOKENS' : 'STOP',
            index: 0,
          },
        ],
        ...(r.omitUsage ? {} : { usageMetadata: googleUsageOf(r) }),
        modelVersion: r.model,
      };
  }
}

/** Google's answer to an API key it does not take: HTTP 400, the reason only in `details`. */
export function googleKeyRefusal(message: string): Json {
  return {
    error: {
      code: 400,
      message,
      status: 'INVALID_ARGUMENT',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
        { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
      ],
    },
  };
}

/** An error body in the provider's own error format. */
export function errorBody(format: WireFormat, status: number, message: string, extra: { code?: string; param?: string } = {}): Json {
  // A 404 is the providers' "no such model" (a path they do not serve answers the router's own 404).
  const notFound = status === 404;
  const type =
    status === 401
      ? 'authentication_error'
      : status === 403
        ? 'permission_error'
        : status === 429
          ? 'rate_limit_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
  switch (format) {
    case 'anthropic':
      return { type: 'error', error: { type: extra.code ?? (notFound ? 'not_found_error' : type), message } };
    case 'mistral':
      return { object: 'error', message, type, param: null, code: String(status) };
    case 'bedrock':
      return { message };
    case 'google': {
      const gStatus =
        status === 401
          ? 'UNAUTHENTICATED'
          : status === 403
            ? 'PERMISSION_DENIED'
            : status === 429
              ? 'RESOURCE_EXHAUSTED'
              : status >= 500
                ? 'INTERNAL'
                : notFound
                  ? 'NOT_FOUND'
                  : 'INVALID_ARGUMENT';
      return { error: { code: status, message, status: extra.code ?? gStatus } };
    }
    default:
      return {
        error: {
          message,
          type,
          code: extra.code ?? (status === 401 ? 'invalid_api_key' : notFound ? 'model_not_found' : null),
          param: extra.param ?? null,
        },
      };
  }
}
