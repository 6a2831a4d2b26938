import type { UsageValues } from './faults.js';
import type { WireFormat } from './wireFormats.js';

type Json = Record<string, unknown>;

/** The usage field names of a format: input, output, total (Anthropic reports no total). */
const FIELDS: Partial<Record<WireFormat, [string, string, string | undefined]>> = {
  'openai-chat': ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  openrouter: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  'openai-responses': ['input_tokens', 'output_tokens', 'total_tokens'],
  anthropic: ['input_tokens', 'output_tokens', undefined],
};

/** `usage` with the given values written over its counts (a value of `undefined` removes the field). */
function overwrite(format: WireFormat, usage: Json, values: UsageValues, only?: 'input' | 'output'): Json {
  const names = FIELDS[format];
  if (!names) return usage;
  const out = { ...usage };
  const set = (name: string | undefined, key: keyof UsageValues) => {
    if (!name || !(key in values) || (only && key !== only)) return;
    if (values[key] === undefined) delete out[name];
    else out[name] = values[key];
  };
  set(names[0], 'input');
  set(names[1], 'output');
  set(names[2], 'total');
  return out;
}

/** A plain (non-streamed) reply body with hostile usage counts. */
export function bodyWithUsage(format: WireFormat, body: Json, values: UsageValues): Json {
  if (!FIELDS[format]) return body;
  return { ...body, usage: overwrite(format, (body.usage as Json | undefined) ?? {}, values) };
}

/** One SSE frame's event name and JSON data, to rewrite and write back. */
function parseFrame(frame: string): { event: string | undefined; data: Json } | undefined {
  const event = /^event: (.*)$/m.exec(frame)?.[1];
  const data = /^data: (.*)$/m.exec(frame)?.[1];
  if (!data || data === '[DONE]') return undefined;
  return { event, data: JSON.parse(data) as Json };
}
const frameOf = (event: string | undefined, data: Json) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/**
 * A streamed reply's frames with hostile usage: the usage event's counts replaced (OpenAI Chat's
 * usage chunk; Anthropic's input on `message_start`, output (and input, given) on `message_delta`;
 * the Responses API's `response.completed` / `.incomplete`), and with `again` a second usage event
 * after the first, as a provider that repeats it would send.
 */
export function framesWithUsage(
  format: WireFormat,
  frames: Array<string | Uint8Array>,
  values: UsageValues,
  again?: UsageValues,
): Array<string | Uint8Array> {
  if (!FIELDS[format]) return frames;
  const out: Array<string | Uint8Array> = [];
  for (const frame of frames) {
    const f = typeof frame === 'string' ? parseFrame(frame) : undefined;
    if (!f) {
      out.push(frame);
      continue;
    }
    const { event, data } = f;
    const usageEvent = (v: UsageValues): string | undefined => {
      if ((format === 'openai-chat' || format === 'openrouter') && data.usage && typeof data.usage === 'object')
        return frameOf(event, { ...data, usage: overwrite(format, data.usage as Json, v) });
      if (format === 'anthropic' && data.type === 'message_delta')
        return frameOf(event, { ...data, usage: overwrite(format, (data.usage as Json | undefined) ?? {}, v) });
      if (format === 'openai-responses' && (data.type === 'response.completed' || data.type === 'response.incomplete')) {
        const response = data.response as Json;
        return frameOf(event, { ...data, response: { ...response, usage: overwrite(format, (response.usage as Json) ?? {}, v) } });
      }
      return undefined;
    };
    if (format === 'anthropic' && data.type === 'message_start') {
      const message = data.message as Json;
      out.push(frameOf(event, { ...data, message: { ...message, usage: overwrite(format, message.usage as Json, values, 'input') } }));
      continue;
    }
    const first = usageEvent(values);
    if (!first) {
      out.push(frame);
      continue;
    }
    out.push(first);
    if (again) {
      const repeated = usageEvent(again)!;
      // A repeated Responses event carries the next sequence number.
      out.push(
        typeof data.sequence_number === 'number'
          ? repeated.replace(`"sequence_number":${data.sequence_number}`, `"sequence_number":${data.sequence_number + 1}`)
          : repeated,
      );
    }
  }
  return out;
}
