import { toWireError, type Attempt, type GenerateTextOutput, type StreamEvent, type WireError } from '@ai-backend/core/internal';
import { chargedUsage } from '../shared/chargedUsage.js';
import { namedInMessage } from '../shared/namedInMessage.js';

/** OpenAI's finish_reason for the AI SDK's. */
export function finishReason(reason: string): string {
  switch (reason) {
    case 'length':
      return 'length';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return 'stop';
  }
}

const toolCall = (t: { toolCallId: string; toolName: string; input: unknown }, index?: number) => ({
  ...(index !== undefined ? { index } : {}),
  id: t.toolCallId,
  type: 'function' as const,
  function: { name: t.toolName, arguments: JSON.stringify(t.input ?? {}) },
});

function usageOf(r: GenerateTextOutput) {
  const u = r.data.usage;
  return (
    chargedUsage('openai-chat', r) ?? {
      prompt_tokens: u.inputTokens ?? 0,
      completion_tokens: u.outputTokens ?? 0,
      total_tokens: u.totalTokens ?? 0,
    }
  );
}

/**
 * Which provider and model served the call, and what it cost: an extra top-level field that
 * the vendors' clients ignore and gateway-aware clients read (every /v1 wire format).
 */
export function gatewayField(r: GenerateTextOutput) {
  return {
    ai_backend: {
      provider: r.data.provider,
      model: r.data.model,
      request_id: r.data.requestId,
      ...(r.data.attempts ? { attempts: r.data.attempts satisfies Attempt[] } : {}),
      ...(r.tokenUsage ? { token_usage: r.tokenUsage } : {}),
      ...(r.usageInfo ? { usage_info: r.usageInfo } : {}),
      ...(r.data.object !== undefined ? { object: r.data.object } : {}),
      ...(r.data.cache ? { cache: r.data.cache } : {}),
    },
  };
}

/**
 * The answer's `model`: what the client sent (an alias stays an alias) when the requested target
 * served, else `provider/model` of the fallback that did (core's `fallback`: set with `attempts`,
 * and on a cache hit of a fallback's answer, which tried no target but names the same one).
 */
export function servedModel(requested: string, served: { provider: string; model: string; fallback?: true | undefined }): string {
  return served.fallback ? `${served.provider}/${served.model}` : requested;
}

/** A `chat.completion` from ai.generateText's result. */
export function completionBody(r: GenerateTextOutput, requested: string) {
  const calls = r.data.toolCalls ?? [];
  return {
    id: `chatcmpl-${r.data.requestId}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: servedModel(requested, r.data),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length && !r.data.text ? null : r.data.text,
          refusal: null,
          ...(calls.length ? { tool_calls: calls.map((c) => toolCall(c)) } : {}),
        },
        logprobs: null,
        finish_reason: calls.length ? 'tool_calls' : finishReason(r.data.finishReason),
      },
    ],
    usage: usageOf(r),
    system_fingerprint: null,
    ...gatewayField(r),
  };
}

/** Turns ai.streamText's events into `chat.completion.chunk` SSE frames. */
export class ChunkWriter {
  private id = 'chatcmpl-pending';
  private readonly created = Math.floor(Date.now() / 1000);
  private tools = 0;
  /** `model` starts as what the client sent; `start` names the fallback when one serves. */
  constructor(
    private model: string,
    private readonly includeUsage: boolean,
  ) {}

  private chunk(delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}): string {
    const body = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(this.includeUsage ? { usage: null } : {}),
      ...extra,
    };
    return `data: ${JSON.stringify(body)}\n\n`;
  }

  /** The frames for one event (possibly none). */
  frames(e: StreamEvent): string {
    switch (e.type) {
      // A pass-through stream's bytes go out as they are (wireFormatHandler); no writer encodes them.
      case 'wire':
        return '';
      case 'start':
        this.id = `chatcmpl-${e.requestId}`;
        this.model = servedModel(this.model, e);
        return this.chunk({ role: 'assistant', content: '' }, null);
      case 'text':
        return this.chunk({ content: e.delta }, null);
      case 'tool-call':
        return this.chunk({ tool_calls: [toolCall(e, this.tools++)] }, null);
      case 'finish': {
        const r = e.result;
        let out = this.chunk({}, this.tools ? 'tool_calls' : finishReason(r.data.finishReason), gatewayField(r));
        if (this.includeUsage)
          out += `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: usageOf(r) })}\n\n`;
        return out + 'data: [DONE]\n\n';
      }
    }
  }
}

/** OpenAI's error `type` for an HTTP status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** The procedure's input fields under the names the OpenAI request gave them. */
const OPENAI_FIELD: Record<string, string> = {
  'options.maxTokens': 'max_tokens',
  'options.temperature': 'temperature',
  'options.model': 'model',
  provider: 'model',
  toolChoice: 'tool_choice',
  'output.schema': 'response_format.json_schema.schema',
  output: 'response_format',
  fallbacks: 'models',
  metadata: 'user',
};

/**
 * A validation issue's path as the client wrote the field (`options.maxTokens` → `max_tokens`,
 * `messages.0.content` → `messages[0].content`, `tools.0.name` → `tools[0].function.name`), so
 * `param` and the message name what the client sent.
 */
export function openAiParam(path: readonly unknown[], naming: FieldNaming = {}): string {
  const dotted = path.map(String).join('.');
  for (const [ours, theirs] of Object.entries({ ...OPENAI_FIELD, ...naming.names }))
    if (dotted === ours || dotted.startsWith(`${ours}.`)) return theirs + dotted.slice(ours.length);
  const named = path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
  return naming.flatTools ? named : named.replace(/^tools(\[\d+\])\.(name|description|parameters)/, 'tools$1.function.$2');
}

/**
 * How one request names the procedure's fields where that differs from a Chat Completions request
 * with `max_tokens` (the default): `names` overrides entries of the table above (a Chat request
 * that sent `max_completion_tokens`, a Responses request's `max_output_tokens` and `text.format`),
 * and `flatTools` says its tools carry `name` and `parameters` at the top (the Responses API's).
 */
export interface FieldNaming {
  names?: Record<string, string>;
  flatTools?: boolean;
}

/**
 * `code`: our error code in lower case, or, for a provider's refusal of the request, the provider's
 * own code when it sent one (`context_length_exceeded`, `model_not_found`), as a client talking to
 * the provider directly would read it (docs/ai.md#errors).
 */
function wireCode(w: WireError): string {
  const upstream = w.details?.upstreamCode;
  // Only for the caller's own error: a refusal about the platform's account (our 502) is not theirs to read.
  return typeof upstream === 'string' && w.httpStatus < 500 ? upstream : (w.appCode ?? w.code).toLowerCase();
}

/** An OpenAI-style error body and status for any error, through core's one wire mapping. */
export function openAiError(
  thrown: unknown,
  naming?: FieldNaming,
): {
  wire: WireError;
  status: number;
  body: { error: { message: string; type: string; param: string | null; code: string | null } };
  headers?: Record<string, string>;
} {
  const w = toWireError(thrown);
  let message = w.message;
  let param = typeof w.details?.param === 'string' ? w.details.param : null;
  // Core names an input field by its dotted path (`tools.0.parameters`).
  if (param === null && typeof w.details?.field === 'string') {
    param = openAiParam(
      w.details.field.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)),
      naming,
    );
    message = namedInMessage(message, w.details.field, param);
  }
  if (w.issues) {
    const issues = w.issues as Array<{ path: unknown[]; message: string }>;
    message =
      `invalid request: ${issues.map((i) => `${(i.path.length && openAiParam(i.path, naming)) || '(body)'}: ${i.message}`).join('; ')}`.slice(
        0,
        2000,
      );
    if (issues[0]?.path.length) param = openAiParam(issues[0].path, naming);
  }
  return {
    wire: w,
    status: w.httpStatus,
    body: { error: { message, type: errorType(w.httpStatus), param, code: wireCode(w) } },
    ...(w.headers ? { headers: w.headers } : {}),
  };
}
