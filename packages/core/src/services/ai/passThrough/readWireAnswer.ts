import type { ToolCallOut } from '../toolCallOut.js';
import type { WireFormat } from './wireRequest.js';
import { isTokenCount } from '../tokenCount.js';

/** Token counts an answer reported, in the engine's terms (each a token count: tokenCount.ts). */
export interface WireUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** A usage read as the engine takes it: undefined unless it could be read whole. */
const readable = (u: UsageRead): WireUsage | undefined => (u === 'unreadable' ? undefined : u);

/** What the engine reads of a non-streamed answer: usage for metering, the rest for the procedure's result and the cache entry. */
export interface WireAnswerSummary {
  /** Undefined when the answer has none or it cannot be read: the call is charged its hold. */
  usage: WireUsage | undefined;
  text: string;
  toolCalls: ToolCallOut[];
  /** The AI SDK's finish reason names (what the cache and the other formats' writers expect). */
  finishReason: string;
  /** The stop sequence the answer stopped on, when the format names it (Anthropic's `stop_sequence`). */
  stopSequence?: string;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
const args = (raw: unknown): unknown => {
  if (typeof raw !== 'string') return raw ?? {};
  try {
    return raw ? JSON.parse(raw) : {};
  } catch {
    return raw;
  }
};

/**
 * A usage object as read: its counts, or `unreadable` when one of them is missing or is not a token
 * count (a string, a negative, a fraction, a huge number: tokenCount.ts), which charges the call its
 * hold; undefined when the answer carries no usage object at all (absent or null).
 */
export type UsageRead = WireUsage | 'unreadable' | undefined;

/** One count: undefined when absent (or null), `false` when present but not a token count. */
function count(v: unknown): number | undefined | false {
  if (v == null) return undefined;
  return isTokenCount(v) ? v : false;
}

/** Input and output read from a usage object; both must be token counts. */
function both(input: number | undefined | false, output: number | undefined | false): WireUsage | 'unreadable' {
  if (input === undefined || input === false || output === undefined || output === false) return 'unreadable';
  // The total is ours, not the answer's: a `total_tokens` of 0 (or below its parts) must not lower the charge.
  return { inputTokens: input, outputTokens: output, totalTokens: input + output };
}

/** OpenAI Chat Completions usage (`prompt_tokens`, `completion_tokens`; `total_tokens` is not read). */
export function chatUsage(u: unknown): UsageRead {
  const o = obj(u);
  return o ? both(count(o.prompt_tokens), count(o.completion_tokens)) : undefined;
}

/** Responses API usage (`input_tokens`, `output_tokens`; `total_tokens` is not read). */
export function responsesUsage(u: unknown): UsageRead {
  const o = obj(u);
  return o ? both(count(o.input_tokens), count(o.output_tokens)) : undefined;
}

/**
 * Anthropic's input tokens: uncached plus cache writes and reads (all billed input; the AI SDK
 * counts them so too). Undefined without `input_tokens`; false when any of them is not a count.
 */
export function anthropicInput(u: unknown): number | undefined | false {
  const o = obj(u);
  const input = count(o?.input_tokens);
  if (input === undefined || input === false) return input;
  const writes = count(o!.cache_creation_input_tokens);
  const reads = count(o!.cache_read_input_tokens);
  if (writes === false || reads === false) return false;
  return input + (writes ?? 0) + (reads ?? 0);
}

/** A whole Anthropic answer's usage: its input (cache tokens included) and `output_tokens`. */
function anthropicUsage(u: unknown): UsageRead {
  const o = obj(u);
  return o ? both(anthropicInput(o), count(o.output_tokens)) : undefined;
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
    return { usage: readable(chatUsage(a.usage)), text, toolCalls, finishReason: CHAT_FINISH[String(choice.finish_reason)] ?? 'other' };
  }
  if (format === 'anthropic-messages') {
    for (const b of Array.isArray(a.content) ? a.content : []) {
      const block = obj(b) ?? {};
      if (block.type === 'text' && typeof block.text === 'string') text += block.text;
      else if (block.type === 'tool_use' && typeof block.name === 'string')
        toolCalls.push({ toolCallId: String(block.id ?? ''), toolName: block.name, input: block.input ?? {} });
    }
    return {
      usage: readable(anthropicUsage(a.usage)),
      text,
      toolCalls,
      finishReason: ANTHROPIC_FINISH[String(a.stop_reason)] ?? 'other',
      ...(a.stop_reason === 'stop_sequence' && typeof a.stop_sequence === 'string' && a.stop_sequence !== ''
        ? { stopSequence: a.stop_sequence }
        : {}),
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
    usage: readable(responsesUsage(a.usage)),
    text,
    toolCalls,
    finishReason: toolCalls.length ? 'tool-calls' : incomplete ? 'length' : 'stop',
  };
}
