import {
  anthropicCacheReads,
  anthropicCacheWriteExtra,
  anthropicInput,
  chatUsage,
  responsesUsage,
  type UsageRead,
  type WireUsage,
} from './readWireAnswer.js';
import type { WireFormat } from './wireRequest.js';
import { isTokenCount } from '../tokenCount.js';

/** A `usage` that is not null (an object, or a hostile string or number, which is unreadable usage). */
const USAGE_OBJECT = /"usage"\s*:\s*[^\sn]/;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const BOUNDARY = /\r?\n\r?\n/g;

/** The Responses API's opening events, before any output: they need not reach the caller before a fallback. */
const RESPONSES_OPENING = new Set([
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
]);

/** A Chat choice that carries more than the opening role chunk: any delta field but `role`, or a finish reason. */
function carries(choice: unknown): boolean {
  const c = choice as { delta?: Record<string, unknown>; finish_reason?: unknown } | null;
  if (c?.finish_reason != null) return true;
  return Object.entries(c?.delta ?? {}).some(([k, v]) => k !== 'role' && v != null && v !== '' && !(Array.isArray(v) && v.length === 0));
}

/** The `data:` payload of one server-sent event (its data lines joined). */
function dataOf(event: string): string {
  let out = '';
  for (const line of event.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const v = line.slice(line[5] === ' ' ? 6 : 5).replace(/\r$/, '');
    out = out ? `${out}\n${v}` : v;
  }
  return out;
}

function parse(payload: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(payload) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads a pass-through answer's event stream as it passes to the caller, for its usage: OpenAI
 * Chat's usage chunk, Anthropic's `message_start` (input) and `message_delta` (output), the
 * Responses API's `response.completed` / `.incomplete` / `.failed`; and for the output it carried
 * (`outputBytes`: Chat's `choices[].delta`, Anthropic's `content_block_start` / `_delta`, the
 * Responses `*.delta` events), which is what a stream the client leaves early is charged for.
 * Only events that can carry either are parsed. Bytes go on as they came, except on an OpenAI
 * Chat stream whose usage chunk was asked for on the caller's behalf (`dropUsageChunk`): there
 * whole events are passed on and that chunk (no choices, only usage) is left out, so the caller
 * sees the stream it asked for.
 */
export class WireStream {
  private readonly decoder = new TextDecoder();
  private readonly encoder = new TextEncoder();
  private pending = '';
  private input: number | undefined;
  private output: number | undefined;
  /** A usage event whose counts could not be read went by: the stream's usage cannot be trusted. */
  private unreadable = false;
  /**
   * The format's terminal event went by (OpenAI Chat's `data: [DONE]`, Anthropic's `message_stop`,
   * the Responses API's `response.completed` / `.incomplete` / `.failed`): only such a stream's
   * usage is final. One the upstream cut or closed before it is charged its hold.
   */
  ended = false;
  /**
   * Output began: an event went by that carries more than the stream's opening envelope (Chat's
   * role-only chunk, Anthropic's `message_start`, `ping` and an empty text block's start, the
   * Responses API's `created`, `in_progress`, `output_item.added`, `content_part.added`). Until then
   * nothing needs to reach the caller, so an upstream that fails or stalls may still fall back.
   */
  started = false;
  /** Bytes of answer received (for logs). */
  bytes = 0;
  /**
   * Whole events passed on so far: the next event's `sequence_number` on a Responses stream
   * (numbered from 0), so an error event we add after it continues the sequence.
   */
  events = 0;
  /**
   * UTF-8 bytes of the output the events carried so far (text, reasoning, tool names and
   * arguments): what a stream the client left before its usage event is charged for, as on the
   * SDK path (every token is at least one byte).
   */
  outputBytes = 0;

  /**
   * The usage the answer reported, once its usage event went by: each count the largest any of its
   * usage events gave (a repeated or cumulative event never lowers it); undefined when one of them
   * could not be read (readWireAnswer.ts), or no output count came.
   */
  get usage(): WireUsage | undefined {
    if (this.unreadable || this.input === undefined || this.output === undefined) return undefined;
    const usage: WireUsage = { inputTokens: this.input, outputTokens: this.output, totalTokens: this.input + this.output };
    return {
      ...usage,
      ...(this.cacheWriteExtra > 0 ? { cacheWriteExtra: this.cacheWriteExtra } : {}),
      ...(this.cachedInput > 0 ? { cachedInputTokens: Math.min(this.cachedInput, this.input) } : {}),
    };
  }

  /** Anthropic's cache writes priced above the input price, as reported so far (anthropicCacheWriteExtra). */
  cacheWriteExtra = 0;
  /**
   * Input read from the provider's prompt cache, as reported so far (WireUsage.cachedInputTokens:
   * OpenAI's `cached_tokens`, Anthropic's cache reads), the largest any usage event gave (Anthropic's
   * `message_delta` may leave it out), at most the input.
   */
  private cachedInput = 0;

  /** A usage event's cache writes and reads: the largest any event gave (a repeated or cumulative event never lowers them). */
  private noteCache(u: unknown): void {
    this.cacheWriteExtra = Math.max(this.cacheWriteExtra, anthropicCacheWriteExtra(u));
    this.cachedInput = Math.max(this.cachedInput, anthropicCacheReads(u));
  }

  /** The input tokens the answer reported so far (Anthropic's `message_start`), before its full usage. */
  get reportedInput(): number | undefined {
    return this.unreadable ? undefined : this.input;
  }

  /** Take one usage event's counts in. */
  private note(u: UsageRead): void {
    if (u === undefined) return;
    if (u === 'unreadable') this.unreadable = true;
    else {
      this.noteInput(u.inputTokens);
      this.output = Math.max(this.output ?? 0, u.outputTokens);
      this.cachedInput = Math.max(this.cachedInput, u.cachedInputTokens ?? 0);
    }
  }
  private noteInput(input: number | undefined | false): void {
    if (input === false) this.unreadable = true;
    else if (input !== undefined) this.input = Math.max(this.input ?? 0, input);
  }

  constructor(
    private readonly format: WireFormat,
    private readonly dropUsageChunk: boolean,
  ) {}

  /** One chunk from the upstream: what to send the caller now (possibly nothing). */
  push(chunk: Uint8Array): Uint8Array | undefined {
    this.bytes += chunk.byteLength;
    // Only the new text (and the three characters before it, where a boundary may have begun) is
    // searched: an event that arrives in many chunks is not re-split whole at each one.
    const from = Math.max(0, this.pending.length - 3);
    this.pending += this.decoder.decode(chunk, { stream: true });
    const events: string[] = [];
    let start = 0;
    BOUNDARY.lastIndex = from;
    for (let m = BOUNDARY.exec(this.pending); m; m = BOUNDARY.exec(this.pending)) {
      events.push(this.pending.slice(start, m.index));
      start = m.index + m[0].length;
    }
    if (start > 0) this.pending = this.pending.slice(start);
    if (!this.dropUsageChunk) {
      for (const e of events) this.inspect(e);
      this.events += events.length;
      return chunk;
    }
    // Whole events only, re-encoded from the text they were decoded to.
    let out = '';
    for (const e of events)
      if (this.inspect(e)) {
        out += `${this.rewritten ?? e}\n\n`;
        this.rewritten = undefined;
        this.events++;
      }
    return out ? this.encoder.encode(out) : undefined;
  }

  /**
   * The event just inspected as the caller gets it, when it differs from the upstream's: a Chat
   * chunk with choices that also carries the usage asked for on the caller's behalf (some
   * OpenAI-compatible servers put it on the finishing chunk), without its `usage`.
   */
  private rewritten: string | undefined;

  /** The stream ended: anything held back (an event without its blank line), for the caller. */
  end(): Uint8Array | undefined {
    this.pending += this.decoder.decode();
    const rest = this.pending;
    this.pending = '';
    if (!rest) return undefined;
    const keep = this.inspect(rest);
    if (keep) this.events++;
    const event = this.rewritten ?? rest;
    this.rewritten = undefined;
    return this.dropUsageChunk && keep ? this.encoder.encode(event) : undefined;
  }

  /** Read one event's usage; false when it is the usage chunk to leave out. */
  private inspect(event: string): boolean {
    if (this.format === 'openai-chat') {
      const delta = event.includes('"delta"');
      if (!delta && !USAGE_OBJECT.test(event)) {
        if (event.includes('[DONE]') && dataOf(event) === '[DONE]') this.ended = this.started = true;
        return true;
      }
      const d = parse(dataOf(event));
      if (delta && Array.isArray(d?.choices))
        for (const c of d.choices) {
          this.countChat(c);
          if (carries(c)) this.started = true;
        }
      const u = d?.usage == null ? undefined : (chatUsage(d.usage) ?? 'unreadable');
      if (u !== undefined) this.started = true;
      this.note(u);
      if (u === undefined || !this.dropUsageChunk) return true;
      // The usage asked for on the caller's behalf never reaches it, whatever its counts say: its
      // own chunk (no choices) is left out, a chunk with choices goes on without it.
      if (!Array.isArray(d!.choices) || d!.choices.length === 0) return false;
      this.rewritten = `data: ${JSON.stringify({ ...d, usage: undefined })}`;
      return true;
    }
    if (this.format === 'anthropic-messages') {
      if (event.includes('message_stop') && parse(dataOf(event))?.type === 'message_stop') this.ended = this.started = true;
      if (!event.includes('content_block_') && !event.includes('message_start') && !event.includes('message_delta')) return true;
      const d = parse(dataOf(event));
      if (d?.type === 'content_block_delta') {
        this.countAnthropic(d.delta);
        this.started = true;
      } else if (d?.type === 'content_block_start') {
        const block = d.content_block as { type?: unknown; text?: unknown } | undefined;
        this.countAnthropic(block);
        if (block?.type !== 'text' || block.text) this.started = true;
      } else if (d?.type === 'message_start') {
        const u = (d.message as { usage?: unknown } | undefined)?.usage;
        this.noteInput(anthropicInput(u));
        this.noteCache(u);
      } else if (d?.type === 'message_delta') {
        this.started = true;
        const u = d.usage as Record<string, unknown> | undefined;
        // Newer answers repeat the input count here (cumulative): the largest count wins.
        this.noteInput(anthropicInput(u));
        this.noteCache(u);
        const out = u?.output_tokens;
        if (isTokenCount(out)) this.output = Math.max(this.output ?? 0, out);
        else this.unreadable = true;
      }
      return true;
    }
    if (!this.started) {
      const type = /^event:\s*(\S+)/m.exec(event)?.[1] ?? /"type"\s*:\s*"([^"]+)"/.exec(event)?.[1];
      if (type && !RESPONSES_OPENING.has(type)) this.started = true;
    }
    const delta = /response\.(output_text|refusal|function_call_arguments)\.delta/.test(event);
    if (!delta && !/response\.(completed|incomplete|failed)/.test(event)) return true;
    const d = parse(dataOf(event));
    if (delta) {
      this.count(str(d?.delta));
      return true;
    }
    if (typeof d?.type === 'string' && /^response\.(completed|incomplete|failed)$/.test(d.type)) this.ended = true;
    this.note(responsesUsage((d?.response as { usage?: unknown } | undefined)?.usage));
    return true;
  }
  private count(s: string): void {
    if (s) this.outputBytes += Buffer.byteLength(s, 'utf8');
  }

  /** One Chat choice's delta: its text, refusal and tool calls (name and argument pieces). */
  private countChat(choice: unknown): void {
    const delta = (choice as { delta?: Record<string, unknown> } | null)?.delta;
    if (typeof delta !== 'object' || delta === null) return;
    this.count(str(delta.content));
    this.count(str(delta.refusal));
    if (!Array.isArray(delta.tool_calls)) return;
    for (const tc of delta.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[]) {
      this.count(str(tc?.function?.name));
      this.count(str(tc?.function?.arguments));
    }
  }

  /** An Anthropic content block's start (a tool's name, any text it opens with) or delta (text, thinking, tool input JSON). */
  private countAnthropic(part: unknown): void {
    if (typeof part !== 'object' || part === null) return;
    const p = part as Record<string, unknown>;
    this.count(str(p.text));
    this.count(str(p.thinking));
    this.count(str(p.partial_json));
    if (p.type === 'tool_use' || p.type === 'server_tool_use') this.count(str(p.name));
  }
}
