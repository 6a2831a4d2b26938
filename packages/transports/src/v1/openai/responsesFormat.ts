import type { GenerateTextOutput, StreamEvent } from '@ai-backend/core/internal';
import { gatewayField, servedModel } from './openAiFormat.js';
import { chargedUsage } from '../shared/chargedUsage.js';

const usageOf = (r: GenerateTextOutput) => {
  const input = r.data.usage.inputTokens ?? 0;
  const output = r.data.usage.outputTokens ?? 0;
  return (
    chargedUsage('openai-responses', r) ?? {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: r.data.usage.totalTokens ?? input + output,
    }
  );
};

type Item = Record<string, unknown>;
const messageItem = (id: string, text: string, status: string): Item => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [] }],
});
const callItem = (t: { toolCallId: string; toolName: string; input: unknown }, status: string, args: string): Item => ({
  type: 'function_call',
  id: `fc_${t.toolCallId}`,
  call_id: t.toolCallId,
  name: t.toolName,
  arguments: args,
  status,
});

/** The Response object; `output` and `usage` once done. `instructions` is never echoed (it may name a server prompt). */
function responseObject(id: string, created: number, model: string, status: string, output: Item[], r?: GenerateTextOutput) {
  const incomplete = r?.data.finishReason === 'length';
  return {
    id,
    object: 'response',
    created_at: created,
    status: r ? (incomplete ? 'incomplete' : 'completed') : status,
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: r ? usageOf(r) : null,
    ...(r ? gatewayField(r) : {}),
  };
}

/** A Responses API `response` from ai.generateText's result. */
export function responseBody(r: GenerateTextOutput, requested: string) {
  const output: Item[] = [];
  if (r.data.text || !r.data.toolCalls?.length) output.push(messageItem(`msg_${r.data.requestId}`, r.data.text, 'completed'));
  for (const t of r.data.toolCalls ?? []) output.push(callItem(t, 'completed', JSON.stringify(t.input ?? {})));
  return responseObject(`resp_${r.data.requestId}`, Math.floor(Date.now() / 1000), servedModel(requested, r.data), 'completed', output, r);
}

/**
 * ai.streamText events → the Responses API's streaming events: response.created,
 * response.in_progress, output_item.added / content_part.added / output_text.delta ... done per
 * message, output_item.added / function_call_arguments.delta / .done per tool call,
 * response.completed (usage). Every event carries its `sequence_number`.
 */
export class ResponseStreamWriter {
  private seq = 0;
  private id = '';
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly output: Item[] = [];
  private text: { index: number; id: string; text: string } | undefined;
  constructor(private readonly requested: string) {}

  private ev(type: string, data: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...data })}\n\n`;
  }

  private closeText(): string {
    const t = this.text;
    if (!t) return '';
    this.text = undefined;
    const item = messageItem(t.id, t.text, 'completed');
    this.output[t.index] = item;
    const part = { type: 'output_text', text: t.text, annotations: [] };
    return (
      this.ev('response.output_text.done', { item_id: t.id, output_index: t.index, content_index: 0, text: t.text }) +
      this.ev('response.content_part.done', { item_id: t.id, output_index: t.index, content_index: 0, part }) +
      this.ev('response.output_item.done', { output_index: t.index, item })
    );
  }

  frames(e: StreamEvent): string {
    switch (e.type) {
      // A pass-through stream's bytes go out as they are (wireFormatHandler): only their events are
      // counted, so an error event after them continues the upstream's sequence_number.
      case 'wire':
        this.seq = e.events;
        return '';
      case 'start': {
        this.id = `resp_${e.requestId}`;
        this.model = servedModel(this.requested, e);
        const response = responseObject(this.id, this.created, this.model, 'in_progress', []);
        return this.ev('response.created', { response }) + this.ev('response.in_progress', { response });
      }
      case 'text': {
        let out = '';
        if (!this.text) {
          this.text = { index: this.output.length, id: `msg_${this.id.slice(5)}_${this.output.length}`, text: '' };
          this.output.push(messageItem(this.text.id, '', 'in_progress'));
          out += this.ev('response.output_item.added', {
            output_index: this.text.index,
            item: messageItem(this.text.id, '', 'in_progress'),
          });
          out += this.ev('response.content_part.added', {
            item_id: this.text.id,
            output_index: this.text.index,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [] },
          });
        }
        this.text.text += e.delta;
        return (
          out +
          this.ev('response.output_text.delta', {
            item_id: this.text.id,
            output_index: this.text.index,
            content_index: 0,
            delta: e.delta,
            logprobs: [],
          })
        );
      }
      case 'tool-call': {
        let out = this.closeText();
        const index = this.output.length;
        const args = JSON.stringify(e.input ?? {});
        const item = callItem(e, 'completed', args);
        this.output.push(item);
        out += this.ev('response.output_item.added', { output_index: index, item: callItem(e, 'in_progress', '') });
        out += this.ev('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: args });
        out += this.ev('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: args });
        return out + this.ev('response.output_item.done', { output_index: index, item });
      }
      case 'finish': {
        const out = this.closeText();
        const response = responseObject(this.id, this.created, this.model, 'completed', this.output, e.result);
        return out + this.ev(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
      }
    }
  }

  /** The Responses API's `error` event, numbered in this stream's sequence. */
  errorFrame(error: { message: string; code: string | null; param: string | null }): string {
    return this.ev('error', { code: error.code, message: error.message, param: error.param });
  }
}
