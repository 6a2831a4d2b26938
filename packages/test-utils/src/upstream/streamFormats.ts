import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import {
  anthropicInputOf,
  anthropicStop,
  chatUsageOf,
  googleUsageOf,
  responsesCallItem,
  responsesMessageItem,
  responsesObject,
  type ReplyParts,
  type WireFormat,
} from './wireFormats.js';

/**
 * Streaming replies of the four upstream wire formats as server-sent-event frames, usage in
 * the final event as each provider sends it:
 * - OpenAI Chat Completions and OpenRouter: `chat.completion.chunk`s, a final chunk with
 *   `usage` (stream_options.include_usage), then `data: [DONE]`;
 * - OpenAI Responses: response.created, response.in_progress, output_item.added,
 *   content_part.added, output_text.delta ..., output_text.done, content_part.done,
 *   output_item.done, response.completed (the whole response with its usage), numbered;
 * - Anthropic Messages: message_start (input usage), content_block_start/delta/stop,
 *   message_delta (output usage), message_stop;
 * - Google streamGenerateContent?alt=sse: GenerateContentResponse chunks, the last with
 *   finishReason and usageMetadata;
 * - Amazon Bedrock ConverseStream: binary AWS event-stream messages (not SSE), encoded with the
 *   same codec the AWS SDKs decode them with: messageStart, contentBlockStart (tool use),
 *   contentBlockDelta ..., contentBlockStop, messageStop (stopReason), metadata (usage).
 */

const bedrockCodec = new EventStreamCodec(toUtf8, fromUtf8);
const bedrockEvent = (type: string, body: Record<string, unknown>): Uint8Array =>
  bedrockCodec.encode({
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify(body)),
  });

/** The content type a streamed reply of this format is sent with. */
export const streamContentType = (format: WireFormat): string =>
  format === 'bedrock' ? 'application/vnd.amazon.eventstream' : 'text/event-stream';

let seq = 0;
const id = (prefix: string) => `${prefix}_stream${(++seq).toString(36)}`;
const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
const named = (event: string, value: Record<string, unknown>) => `event: ${event}\ndata: ${JSON.stringify({ type: event, ...value })}\n\n`;

/** Split a reply into the text deltas a stream carries (word by word, spaces kept). */
export function textChunks(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g);
  return parts && parts.length > 0 ? parts : [text];
}

/** The frames of one streamed reply, in order. */
export function streamFrames(format: WireFormat, r: ReplyParts): Array<string | Uint8Array> {
  const chunks = r.toolCall ? [] : textChunks(r.text);
  const args = r.toolCall ? JSON.stringify(r.toolCall.input) : '';
  const created = Math.floor(Date.now() / 1000);
  switch (format) {
    case 'openai-chat':
    case 'openrouter': {
      const cid = id('chatcmpl');
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        data({ id: cid, object: 'chat.completion.chunk', created, model: r.model, choices: [{ index: 0, delta, finish_reason: finish }] });
      const frames = [chunk({ role: 'assistant', content: '' }, null)];
      if (r.toolCall) {
        frames.push(
          chunk(
            { tool_calls: [{ index: 0, id: r.toolCall.id, type: 'function', function: { name: r.toolCall.name, arguments: '' } }] },
            null,
          ),
        );
        frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }, null));
      }
      for (const c of chunks) frames.push(chunk({ content: c }, null));
      frames.push(chunk({}, r.toolCall ? 'tool_calls' : r.truncated ? 'length' : 'stop'));
      if (!r.omitUsage) {
        frames.push(
          data({
            id: cid,
            object: 'chat.completion.chunk',
            created,
            model: r.model,
            choices: [],
            usage: chatUsageOf(r),
          }),
        );
      }
      frames.push('data: [DONE]\n\n');
      return frames;
    }
    case 'mistral': {
      // Mistral sends a tool call whole in one delta, and usage on the chunk that finishes.
      const cid = id('cmpl');
      const chunk = (delta: Record<string, unknown>, finish: string | null, usage?: Record<string, number>) =>
        data({
          id: cid,
          object: 'chat.completion.chunk',
          created,
          model: r.model,
          choices: [{ index: 0, delta, finish_reason: finish }],
          ...(usage ? { usage } : {}),
        });
      const frames = [chunk({ role: 'assistant', content: '' }, null)];
      if (r.toolCall)
        frames.push(chunk({ tool_calls: [{ id: r.toolCall.id, function: { name: r.toolCall.name, arguments: args } }] }, null));
      for (const c of chunks) frames.push(chunk({ content: c }, null));
      const usage = r.omitUsage
        ? undefined
        : { prompt_tokens: r.inputTokens, completion_tokens: r.outputTokens, total_tokens: r.inputTokens + r.outputTokens };
      frames.push(chunk({ content: '' }, r.toolCall ? 'tool_calls' : r.truncated ? 'length' : 'stop', usage));
      frames.push('data: [DONE]\n\n');
      return frames;
    }
    case 'openai-responses': {
      // OpenAI's event sequence, each event numbered: created / in_progress with the response
      // so far, the item added (and its content part), its deltas, the text / arguments done, the
      // part and item done, then completed (or incomplete) with the whole response and its usage.
      const rid = id('resp');
      const itemId = id(r.toolCall ? 'fc' : 'msg');
      let n = 0;
      const ev = (type: string, value: Record<string, unknown>) => named(type, { sequence_number: n++, ...value });
      const frames = [
        ev('response.created', { response: responsesObject(rid, created, r, 'in_progress', []) }),
        ev('response.in_progress', { response: responsesObject(rid, created, r, 'in_progress', []) }),
      ];
      let item: Record<string, unknown>;
      if (r.toolCall) {
        item = responsesCallItem(itemId, r.toolCall, 'completed');
        frames.push(ev('response.output_item.added', { output_index: 0, item: responsesCallItem(itemId, r.toolCall, 'in_progress') }));
        frames.push(ev('response.function_call_arguments.delta', { item_id: itemId, output_index: 0, delta: args }));
        frames.push(
          ev('response.function_call_arguments.done', { item_id: itemId, output_index: 0, name: r.toolCall.name, arguments: args }),
        );
      } else {
        item = responsesMessageItem(itemId, r.text, 'completed');
        const at = { item_id: itemId, output_index: 0, content_index: 0 };
        frames.push(ev('response.output_item.added', { output_index: 0, item: responsesMessageItem(itemId, '', 'in_progress') }));
        frames.push(ev('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }));
        for (const c of chunks) frames.push(ev('response.output_text.delta', { ...at, delta: c, logprobs: [] }));
        frames.push(ev('response.output_text.done', { ...at, text: r.text, logprobs: [] }));
        frames.push(
          ev('response.content_part.done', { ...at, part: { type: 'output_text', text: r.text, annotations: [], logprobs: [] } }),
        );
      }
      frames.push(ev('response.output_item.done', { output_index: 0, item }));
      const status = r.truncated ? 'incomplete' : 'completed';
      frames.push(ev(`response.${status}`, { response: responsesObject(rid, created, r, status, [item]) }));
      return frames;
    }
    case 'anthropic': {
      const frames = [
        named('message_start', {
          message: {
            id: id('msg'),
            type: 'message',
            role: 'assistant',
            model: r.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...anthropicInputOf(r), output_tokens: 1 },
          },
        }),
      ];
      if (r.toolCall) {
        frames.push(
          named('content_block_start', {
            index: 0,
            content_block: { type: 'tool_use', id: r.toolCall.id, name: r.toolCall.name, input: {} },
          }),
        );
        frames.push(named('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: args } }));
      } else {
        frames.push(named('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
        for (const c of chunks) frames.push(named('content_block_delta', { index: 0, delta: { type: 'text_delta', text: c } }));
      }
      frames.push(named('content_block_stop', { index: 0 }));
      frames.push(
        named('message_delta', {
          delta: anthropicStop(r),
          usage: { output_tokens: r.outputTokens },
        }),
      );
      frames.push(named('message_stop', {}));
      return frames;
    }
    case 'bedrock': {
      const frames = [bedrockEvent('messageStart', { role: 'assistant', p: 'abcd' })];
      if (r.toolCall) {
        frames.push(
          bedrockEvent('contentBlockStart', {
            contentBlockIndex: 0,
            start: { toolUse: { toolUseId: r.toolCall.id, name: r.toolCall.name } },
            p: 'ab',
          }),
        );
        frames.push(bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { toolUse: { input: args } }, p: 'ab' }));
      } else {
        for (const c of chunks) frames.push(bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: c }, p: 'ab' }));
      }
      frames.push(bedrockEvent('contentBlockStop', { contentBlockIndex: 0, p: 'ab' }));
      frames.push(bedrockEvent('messageStop', { stopReason: anthropicStop(r).stop_reason, p: 'ab' }));
      if (!r.omitUsage) {
        frames.push(
          bedrockEvent('metadata', {
            usage: { inputTokens: r.inputTokens, outputTokens: r.outputTokens, totalTokens: r.inputTokens + r.outputTokens },
            metrics: { latencyMs: 1 },
            p: 'ab',
          }),
        );
      }
      return frames;
    }
    case 'google': {
      const frames: string[] = [];
      const parts = r.toolCall ? [[{ functionCall: { name: r.toolCall.name, args: r.toolCall.input } }]] : chunks.map((c) => [{ text: c }]);
      parts.forEach((p, i) => {
        const last = i === parts.length - 1;
        frames.push(
          data({
            candidates: [
              { content: { parts: p, role: 'model' }, index: 0, ...(last ? { finishReason: r.truncated ? 'MAX_TOKENS' : 'STOP' } : {}) },
            ],
            ...(last && !r.omitUsage
              ? {
                  usageMetadata: googleUsageOf(r),
                }
              : {}),
            modelVersion: r.model,
          }),
        );
      });
      return frames;
    }
  }
}
