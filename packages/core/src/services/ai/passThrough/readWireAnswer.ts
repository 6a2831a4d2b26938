import type { ToolCallOut } from '../toolCallOut.js';
import type { WireFormat } from './wireRequest.js';
import { isTokenCount } from '../tokenCount.js';

/** Token counts an answer reported, in the engine's terms (each a token count: tokenCount.ts). */
export interface WireUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /**
   * Input tokens' worth billed above the input price (Anthropic's cache writes: a quarter more
   * for the 5-minute cache, double for the hour's): priced, never charged as platform tokens.
   */
  cacheWriteExtra?: number;
  /**
   * Input tokens (of `inputTokens`) read from the provider's prompt cache (OpenAI's `cached_tokens`,
   * Anthropic's cache reads): priced at the model's `cachedInputRatio`, still charged as tokens.
   */
  cachedInputTokens?: number;
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

/**
 * A usage read with the input it says came from the provider's prompt cache, at most its input. A
 * cached count that is not a token count is left out (the input is then priced as input, never
 * below what the provider bills), not the whole usage: it changes no token count.
 */
function withCached(read: WireUsage | 'unreadable', cached: unknown): WireUsage | 'unreadable' {
  if (read === 'unreadable' || !isTokenCount(cached) || cached === 0) return read;
  return { ...read, cachedInputTokens: Math.min(cached, read.inputTokens) };
}

/**
 * OpenAI Chat Completions usage (`prompt_tokens`, `completion_tokens`, and of the prompt the
 * cached part, `prompt_tokens_details.cached_tokens`, as OpenRouter reports it too; `total_tokens`
 * is not read).
 */
export function chatUsage(u: unknown): UsageRead {
  const o = obj(u);
  return o ? withCached(both(count(o.prompt_tokens), count(o.completion_tokens)), obj(o.prompt_tokens_details)?.cached_tokens) : undefined;
}

/** Responses API usage (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`; `total_tokens` is not read). */
export function responsesUsage(u: unknown): UsageRead {
  const o = obj(u);
  return o ? withCached(both(count(o.input_tokens), count(o.output_tokens)), obj(o.input_tokens_details)?.cached_tokens) : undefined;
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

/**
 * What Anthropic's cache writes cost above the input price, in input tokens: a 5-minute write is
 * billed at 1.25 times the input price, an hour's at 2 times (`cache_creation`'s split; writes it
 * does not split count as the hour's, the dearer). 0 without writes (reads: anthropicCacheReads).
 */
export function anthropicCacheWriteExtra(u: unknown): number {
  const o = obj(u);
  const writes = count(o?.cache_creation_input_tokens);
  if (!writes) return 0;
  const split = obj(o!.cache_creation);
  const fiveMin = count(split?.ephemeral_5m_input_tokens);
  const short = typeof fiveMin === 'number' ? Math.min(fiveMin, writes) : 0;
  return Math.ceil(short * 0.25) + (writes - short);
}

/**
 * Anthropic's cache reads (`cache_read_input_tokens`, part of anthropicInput): priced at the
 * model's `cachedInputRatio` (a tenth of the input price, as Anthropic bills them). 0 without reads.
 */
export function anthropicCacheReads(u: unknown): number {
  const reads = count(obj(u)?.cache_read_input_tokens);
  return reads || 0;
}

/** A whole Anthropic answer's usage: its input (cache tokens included) and `output_tokens`. */
function anthropicUsage(u: unknown): UsageRead {
  const o = obj(u);
  if (!o) return undefined;
  const read = both(anthropicInput(o), count(o.output_tokens));
  if (read === 'unreadable' || read === undefined) return read;
  const extra = anthropicCacheWriteExtra(o);
  const reads = anthropicCacheReads(o);
  return { ...read, ...(extra ? { cacheWriteExtra: extra } : {}), ...(reads ? { cachedInputTokens: reads } : {}) };
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
