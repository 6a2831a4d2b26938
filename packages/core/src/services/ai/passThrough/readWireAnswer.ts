import type { ToolCallOut } from '../toolCallOut.js';
import type { WireFormat } from './wireRequest.js';

/** Token counts an answer reported, in the engine's terms (absent fields: not reported). */
export interface WireUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

/** What the engine reads of a non-streamed answer: usage for metering, the rest for the procedure's result and the cache entry. */
export interface WireAnswerSummary {
  usage: WireUsage | undefined;
  text: string;
  toolCalls: ToolCallOut[];
  /** The AI SDK's finish reason names (what the cache and the other formats' writers expect). */
  finishReason: string;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
const args = (raw: unknown): unknown => {
  if (typeof raw !== 'string') return raw ?? {};
  try {
    return raw ? JSON.parse(raw) : {};
  } catch {
    return raw;
  }
};

/** OpenAI Chat Completions usage (`prompt_tokens`, `completion_tokens`, `total_tokens`). */
export function chatUsage(u: unknown): WireUsage | undefined {
  const o = obj(u);
  const input = num(o?.prompt_tokens);
  if (!o || input === undefined) return undefined;
  return {
    inputTokens: input,
    outputTokens: num(o.completion_tokens) ?? 0,
    totalTokens: num(o.total_tokens) ?? input + (num(o.completion_tokens) ?? 0),
  };
}

/** Responses API usage (`input_tokens`, `output_tokens`, `total_tokens`). */
export function responsesUsage(u: unknown): WireUsage | undefined {
  const o = obj(u);
  const input = num(o?.input_tokens);
  if (!o || input === undefined) return undefined;
  const output = num(o.output_tokens) ?? 0;
  return { inputTokens: input, outputTokens: output, totalTokens: num(o.total_tokens) ?? input + output };
}

/** Anthropic's input tokens: uncached plus cache writes and reads (all billed input; the AI SDK counts them so too). */
export function anthropicInput(u: unknown): number | undefined {
  const o = obj(u);
  const input = num(o?.input_tokens);
  if (!o || input === undefined) return undefined;
  return input + (num(o.cache_creation_input_tokens) ?? 0) + (num(o.cache_read_input_tokens) ?? 0);
}

function total(input: number | undefined, output: number | undefined): WireUsage | undefined {
  if (input === undefined) return undefined;
  const out = output ?? 0;
  return { inputTokens: input, outputTokens: out, totalTokens: input + out };
}

const CHAT_FINISH: Record<string, string> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  content_filter: 'content-filter',
};
const ANTHROPIC_FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool-calls',
  refusal: 'content-filter',
};

/** Usage, text, tool calls and finish reason of a non-streamed answer in `format`. */
export function readWireAnswer(format: WireFormat, answer: unknown): WireAnswerSummary {
  const a = obj(answer) ?? {};
  const toolCalls: ToolCallOut[] = [];
  let text = '';
  if (format === 'openai-chat') {
    const choice = obj(Array.isArray(a.choices) ? a.choices[0] : undefined) ?? {};
    const msg = obj(choice.message) ?? {};
    if (typeof msg.content === 'string') text = msg.content;
    for (const c of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
      const f = obj(obj(c)?.function);
      if (f && typeof f.name === 'string')
        toolCalls.push({ toolCallId: String(obj(c)!.id ?? ''), toolName: f.name, input: args(f.arguments) });
    }
    return { usage: chatUsage(a.usage), text, toolCalls, finishReason: CHAT_FINISH[String(choice.finish_reason)] ?? 'other' };
  }
  if (format === 'anthropic-messages') {
    for (const b of Array.isArray(a.content) ? a.content : []) {
      const block = obj(b) ?? {};
      if (block.type === 'text' && typeof block.text === 'string') text += block.text;
      else if (block.type === 'tool_use' && typeof block.name === 'string')
        toolCalls.push({ toolCallId: String(block.id ?? ''), toolName: block.name, input: block.input ?? {} });
    }
    const u = obj(a.usage);
    return {
      usage: total(anthropicInput(u), num(u?.output_tokens)),
      text,
      toolCalls,
      finishReason: ANTHROPIC_FINISH[String(a.stop_reason)] ?? 'other',
    };
  }
  for (const item of Array.isArray(a.output) ? a.output : []) {
    const it = obj(item) ?? {};
    if (it.type === 'message' && Array.isArray(it.content))
      for (const part of it.content) if (obj(part)?.type === 'output_text') text += String(obj(part)!.text ?? '');
    if (it.type === 'function_call' && typeof it.name === 'string')
      toolCalls.push({ toolCallId: String(it.call_id ?? ''), toolName: it.name, input: args(it.arguments) });
  }
  const incomplete = a.status === 'incomplete';
  return {
    usage: responsesUsage(a.usage),
    text,
    toolCalls,
    finishReason: toolCalls.length ? 'tool-calls' : incomplete ? 'length' : 'stop',
  };
}
