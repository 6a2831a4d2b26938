import { toWireError, type GenerateTextOutput, type StreamEvent, type WireError } from '@ai-backend/core/internal';
import { gatewayField, servedModel } from '../openai/openAiFormat.js';
import { chargedUsage } from '../shared/chargedUsage.js';
import { namedInMessage } from '../shared/namedInMessage.js';

/**
 * Anthropic's `stop_reason` and `stop_sequence` for the AI SDK's finish reason: `stop_sequence`
 * with the sequence when the provider named the one the model stopped on (core's
 * `data.stopSequence`); a provider that does not (OpenAI, Google …) says only that the model
 * stopped, so that is `end_turn` with `stop_sequence: null`.
 */
export function stopOf(
  reason: string,
  toolCalls: number,
  stopSequence: string | undefined,
): { stop_reason: string; stop_sequence: string | null } {
  if (toolCalls > 0 || reason === 'tool-calls') return { stop_reason: 'tool_use', stop_sequence: null };
  if (reason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (reason === 'stop' && stopSequence !== undefined) return { stop_reason: 'stop_sequence', stop_sequence: stopSequence };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

const usageOf = (r: GenerateTextOutput) =>
  chargedUsage('anthropic-messages', r) ?? { input_tokens: r.data.usage.inputTokens ?? 0, output_tokens: r.data.usage.outputTokens ?? 0 };

/** An Anthropic `message` from ai.generateText's result. */
export function messageBody(r: GenerateTextOutput, requested: string) {
  const calls = r.data.toolCalls ?? [];
  const content: Array<Record<string, unknown>> = [];
  if (r.data.text) content.push({ type: 'text', text: r.data.text });
  for (const t of calls) content.push({ type: 'tool_use', id: t.toolCallId, name: t.toolName, input: t.input ?? {} });
  return {
    id: `msg_${r.data.requestId}`,
    type: 'message',
    role: 'assistant',
    model: servedModel(requested, r.data),
    content,
    ...stopOf(r.data.finishReason, calls.length, r.data.stopSequence),
    usage: usageOf(r),
    ...gatewayField(r),
  };
}

const sse = (event: string, data: Record<string, unknown>) => `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;

/**
 * ai.streamText events → Anthropic's event stream: message_start, content_block_start / _delta /
 * _stop per text or tool_use block, message_delta (stop_reason, stop_sequence, usage), message_stop.
 */
export class MessageStreamWriter {
  private index = -1;
  private open: 'text' | undefined;
  private tools = 0;
  constructor(private readonly requested: string) {}

  private closeBlock(): string {
    if (!this.open) return '';
    this.open = undefined;
    return sse('content_block_stop', { index: this.index });
  }

  frames(e: StreamEvent): string {
    switch (e.type) {
      // A pass-through stream's bytes go out as they are (wireFormatHandler); no writer encodes them.
      case 'wire':
        return '';
      case 'start':
        return sse('message_start', {
          message: {
            id: `msg_${e.requestId}`,
            type: 'message',
            role: 'assistant',
            model: servedModel(this.requested, e),
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0 },
          },
        });
      case 'text': {
        let out = '';
        if (this.open !== 'text') {
          out += this.closeBlock();
          this.index++;
          this.open = 'text';
          out += sse('content_block_start', { index: this.index, content_block: { type: 'text', text: '' } });
        }
        return out + sse('content_block_delta', { index: this.index, delta: { type: 'text_delta', text: e.delta } });
      }
      case 'tool-call': {
        let out = this.closeBlock();
        this.index++;
        this.tools++;
        out += sse('content_block_start', {
          index: this.index,
          content_block: { type: 'tool_use', id: e.toolCallId, name: e.toolName, input: {} },
        });
        out += sse('content_block_delta', {
          index: this.index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(e.input ?? {}) },
        });
        return out + sse('content_block_stop', { index: this.index });
      }
      case 'finish': {
        const r = e.result;
        return (
          this.closeBlock() +
          sse('message_delta', {
            delta: stopOf(r.data.finishReason, this.tools, r.data.stopSequence),
            usage: usageOf(r),
            ...gatewayField(r),
          }) +
          sse('message_stop', {})
        );
      }
    }
  }
}

/** Anthropic's error `type` for an HTTP status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** The procedure's input fields under the names an Anthropic Messages request gives them. */
const ANTHROPIC_FIELD: Record<string, string> = {
  'options.maxTokens': 'max_tokens',
  'options.temperature': 'temperature',
  'options.topP': 'top_p',
  'options.stopSequences': 'stop_sequences',
  'options.model': 'model',
  provider: 'model',
  systemPrompt: 'system',
  toolChoice: 'tool_choice',
  metadata: 'metadata.user_id',
};

/**
 * A validation issue's path as the client wrote the field (`options.temperature` → `temperature`,
 * `tools.0.parameters` → `tools.0.input_schema`; messages keep Anthropic's dotted `messages.0.content`),
 * so the message names what the client sent.
 */
export function anthropicParam(path: readonly unknown[]): string {
  const dotted = path.map(String).join('.');
  for (const [ours, theirs] of Object.entries(ANTHROPIC_FIELD))
    if (dotted === ours || dotted.startsWith(`${ours}.`)) return theirs + dotted.slice(ours.length);
  return dotted.replace(/^(tools\.\d+)\.parameters/, '$1.input_schema');
}

/** An Anthropic-shaped error (`{ type: 'error', error: { type, message } }`) through core's one wire mapping. */
export function anthropicError(thrown: unknown): {
  wire: WireError;
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
  headers?: Record<string, string>;
} {
  const w = toWireError(thrown);
  let message = w.message;
  if (typeof w.details?.field === 'string') message = namedInMessage(message, w.details.field, anthropicParam(w.details.field.split('.')));
  if (w.issues) {
    const issues = w.issues as Array<{ path: unknown[]; message: string }>;
    message = `invalid request: ${issues.map((i) => `${anthropicParam(i.path) || '(body)'}: ${i.message}`).join('; ')}`.slice(0, 2000);
  }
  return {
    wire: w,
    status: w.httpStatus,
    body: { type: 'error', error: { type: errorType(w.httpStatus), message } },
    ...(w.headers ? { headers: w.headers } : {}),
  };
}
