import { describe, expect, it } from 'vitest';
import { WireStream } from './WireStream.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** Feed `text` in pieces of `size` bytes; what the caller received, as text. */
function run(ws: WireStream, text: string, size: number): string {
  const bytes = enc.encode(text);
  let out = '';
  for (let i = 0; i < bytes.length; i += size) {
    const sent = ws.push(bytes.subarray(i, i + size));
    if (sent) out += dec.decode(sent, { stream: true });
  }
  const rest = ws.end();
  if (rest) out += dec.decode(rest);
  return out;
}

describe('WireStream', () => {
  const chat = [
    sse({ choices: [{ index: 0, delta: { content: 'hé' } }], usage: null }),
    sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }),
    sse({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }),
    'data: [DONE]\n\n',
  ].join('');

  it('CRLF boundaries cut at every place, and an event in many pieces: each event read once, in order', () => {
    const crlf = chat.replaceAll('\n', '\r\n');
    for (const size of [1, 2, 3, 4, 7]) {
      const ws = new WireStream('openai-chat', true);
      const out = run(ws, crlf, size);
      expect(out, `${size}`).not.toContain('prompt_tokens');
      expect(out.split('\n\n').filter(Boolean).length, `${size}`).toBe(3);
      expect(ws.usage, `${size}`).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    }
    const long = sse({ choices: [{ index: 0, delta: { content: 'x'.repeat(200_000) } }], usage: null });
    const ws = new WireStream('openai-chat', true);
    expect(run(ws, long + chat, 4096)).toBe(
      long + chat.replace(sse({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }), ''),
    );
  });

  for (const size of [1, 5, 64, 10_000])
    it(`OpenAI Chat, ${size}-byte pieces: usage read; the asked-for usage chunk left out, every other byte kept`, () => {
      const kept = new WireStream('openai-chat', false);
      expect(run(kept, chat, size)).toBe(chat);
      expect(kept.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
      const dropped = new WireStream('openai-chat', true);
      const out = run(dropped, chat, size);
      expect(out).not.toContain('prompt_tokens');
      expect(out).toBe(chat.replace(sse({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }), ''));
      expect(dropped.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    });

  it('Anthropic: input from message_start (cache tokens included), output from the last message_delta', () => {
    const ws = new WireStream('anthropic-messages', false);
    const text = [
      sse(
        { type: 'message_start', message: { usage: { input_tokens: 5, cache_read_input_tokens: 2, output_tokens: 1 } } },
        'message_start',
      ),
      sse({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'message_delta in text' } }, 'content_block_delta'),
      sse({ type: 'message_delta', usage: { output_tokens: 9 } }, 'message_delta'),
      sse({ type: 'message_stop' }, 'message_stop'),
    ].join('');
    expect(run(ws, text, 7)).toBe(text);
    expect(ws.usage).toEqual({ inputTokens: 7, outputTokens: 9, totalTokens: 16, cachedInputTokens: 2 });
  });

  it('a stream cut before its usage event has no usage', () => {
    const ws = new WireStream('openai-chat', true);
    run(ws, chat.slice(0, chat.indexOf('"choices":[]') - 10), 3);
    expect(ws.usage).toBeUndefined();
    const anthropic = new WireStream('anthropic-messages', false);
    run(anthropic, sse({ type: 'message_start', message: { usage: { input_tokens: 5 } } }, 'message_start'), 4);
    expect(anthropic.usage).toBeUndefined();
  });
  it('counts the output bytes the deltas carried (text, tool names and arguments), not the envelope', () => {
    const ws = new WireStream('openai-chat', true);
    const cut = [
      sse({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hé' } }] }),
      sse({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'get', arguments: '{"a"' } }] } }] }),
      sse({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] }),
    ].join('');
    run(ws, cut, 3);
    expect(ws.outputBytes).toBe(3 + 3 + 4 + 3);
    expect(ws.usage).toBeUndefined();

    const a = new WireStream('anthropic-messages', false);
    const text = [
      sse({ type: 'message_start', message: { usage: { input_tokens: 5, cache_creation_input_tokens: 1 } } }, 'message_start'),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      sse({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'ça' } }, 'content_block_delta'),
      sse(
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't', name: 'get', input: {} } },
        'content_block_start',
      ),
      sse({ type: 'content_block_delta', delta: { type: 'input_json_delta', partial_json: '{"a":1}' } }, 'content_block_delta'),
    ].join('');
    run(a, text, 5);
    expect(a.outputBytes).toBe(3 + 3 + 7);
    expect(a.reportedInput).toBe(6);
    expect(a.usage).toBeUndefined();
  });

  it("an Anthropic stream's cache writes are priced above the input price (message_start's split)", () => {
    const events = (usage: Record<string, unknown>) =>
      [
        sse({ type: 'message_start', message: { usage: { input_tokens: 5, ...usage } } }, 'message_start'),
        sse({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'ok' } }, 'content_block_delta'),
        sse({ type: 'message_delta', usage: { output_tokens: 3 } }, 'message_delta'),
        sse({ type: 'message_stop' }, 'message_stop'),
      ].join('');
    const cached = new WireStream('anthropic-messages', false);
    run(
      cached,
      events({ cache_creation_input_tokens: 300, cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 100 } }),
      4,
    );
    expect(cached.usage).toEqual({ inputTokens: 305, outputTokens: 3, totalTokens: 308, cacheWriteExtra: 50 + 100 });
    const plain = new WireStream('anthropic-messages', false);
    run(plain, events({}), 4);
    expect(plain.usage).toEqual({ inputTokens: 5, outputTokens: 3, totalTokens: 8 });
    // Reads, in message_start and repeated in a cumulative message_delta: cached input, counted once.
    const hit = new WireStream('anthropic-messages', false);
    run(
      hit,
      [
        sse({ type: 'message_start', message: { usage: { input_tokens: 5, cache_read_input_tokens: 1000 } } }, 'message_start'),
        sse({ type: 'message_delta', usage: { input_tokens: 5, cache_read_input_tokens: 1000, output_tokens: 3 } }, 'message_delta'),
        sse({ type: 'message_stop' }, 'message_stop'),
      ].join(''),
      3,
    );
    expect(hit.usage).toEqual({ inputTokens: 1005, outputTokens: 3, totalTokens: 1008, cachedInputTokens: 1000 });
  });

  it("OpenAI Chat's and the Responses API's cached input (`cached_tokens`) is read from their usage event", () => {
    const c = new WireStream('openai-chat', true);
    const usage = { prompt_tokens: 70, completion_tokens: 3, total_tokens: 73, prompt_tokens_details: { cached_tokens: 64 } };
    run(c, chat.replace('"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}', `"usage":${JSON.stringify(usage)}`), 5);
    expect(c.usage).toEqual({ inputTokens: 70, outputTokens: 3, totalTokens: 73, cachedInputTokens: 64 });
    const r = new WireStream('openai-responses', false);
    const completed = { usage: { input_tokens: 70, output_tokens: 3, input_tokens_details: { cached_tokens: 64 } } };
    run(r, sse({ type: 'response.completed', response: completed }, 'response.completed'), 6);
    expect(r.usage).toEqual({ inputTokens: 70, outputTokens: 3, totalTokens: 73, cachedInputTokens: 64 });
  });

  it('only a stream that reached its terminal event ended: [DONE], message_stop, response.completed', () => {
    const cut = new WireStream('openai-chat', false);
    run(cut, chat.replace('data: [DONE]\n\n', ''), 9);
    expect(cut.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(cut.ended).toBe(false);
    const whole = new WireStream('openai-chat', false);
    run(whole, chat, 9);
    expect(whole.ended).toBe(true);
    const a = new WireStream('anthropic-messages', false);
    run(a, sse({ type: 'message_delta', usage: { output_tokens: 1 } }, 'message_delta'), 3);
    expect(a.ended).toBe(false);
    run(a, sse({ type: 'message_stop' }, 'message_stop'), 3);
    expect(a.ended).toBe(true);
    const r = new WireStream('openai-responses', false);
    run(r, sse({ type: 'response.output_text.delta', delta: 'response.completed' }, 'response.output_text.delta'), 4);
    expect(r.ended).toBe(false);
    run(r, sse({ type: 'response.completed', response: { usage: { input_tokens: 2, output_tokens: 3 } } }, 'response.completed'), 4);
    expect(r.ended).toBe(true);
    expect(r.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
  });

  it('repeated usage events: each count the largest reported, never their sum; a hostile one makes the usage unreadable', () => {
    const usage = (u: unknown) => sse({ choices: [], usage: u });
    const twice = new WireStream('openai-chat', true);
    const out = run(twice, usage({ prompt_tokens: 7, completion_tokens: 3 }) + usage({ prompt_tokens: 1, completion_tokens: 0 }), 5);
    expect(twice.usage).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(out).toBe('');
    for (const bad of [{ prompt_tokens: 1, completion_tokens: -1 }, { prompt_tokens: '1', completion_tokens: 1 }, 'lots', 12]) {
      const ws = new WireStream('openai-chat', true);
      // Whatever the usage chunk says, it stays out of a stream that did not ask for it.
      expect(run(ws, usage({ prompt_tokens: 7, completion_tokens: 3 }) + usage(bad), 6)).toBe('');
      expect(ws.usage, JSON.stringify(bad)).toBeUndefined();
    }
    const a = new WireStream('anthropic-messages', false);
    run(
      a,
      [
        sse({ type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } }, 'message_start'),
        sse({ type: 'message_delta', usage: { output_tokens: 9 } }, 'message_delta'),
        sse({ type: 'message_delta', usage: { input_tokens: 2, output_tokens: 4 } }, 'message_delta'),
      ].join(''),
      8,
    );
    expect(a.usage).toEqual({ inputTokens: 5, outputTokens: 9, totalTokens: 14 });
    run(a, sse({ type: 'message_delta', usage: { output_tokens: 2.5 } }, 'message_delta'), 8);
    expect(a.usage).toBeUndefined();
    expect(a.reportedInput).toBeUndefined();
  });

  it('output begins with the first event past the opening envelope (until then a failure may still fall back)', () => {
    const opened = (format: 'openai-chat' | 'anthropic-messages' | 'openai-responses', text: string) => {
      const ws = new WireStream(format, false);
      run(ws, text, 7);
      return ws.started;
    };
    const role = sse({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null });
    expect(opened('openai-chat', `: keep-alive\n\n${role}`)).toBe(false);
    expect(opened('openai-chat', role + sse({ choices: [{ index: 0, delta: { content: 'a' } }] }))).toBe(true);
    expect(opened('openai-chat', sse({ choices: [{ index: 0, delta: { reasoning: 'hm' } }] }))).toBe(true);
    expect(opened('openai-chat', sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }))).toBe(true);
    const start = sse({ type: 'message_start', message: { usage: { input_tokens: 5 } } }, 'message_start');
    const emptyBlock = sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start');
    expect(opened('anthropic-messages', start + sse({ type: 'ping' }, 'ping') + emptyBlock)).toBe(false);
    expect(
      opened(
        'anthropic-messages',
        start + emptyBlock + sse({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'a' } }, 'content_block_delta'),
      ),
    ).toBe(true);
    expect(
      opened(
        'anthropic-messages',
        sse({ type: 'content_block_start', content_block: { type: 'tool_use', name: 'f', input: {} } }, 'content_block_start'),
      ),
    ).toBe(true);
    const opening = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']
      .map((type) => sse({ type }, type))
      .join('');
    expect(opened('openai-responses', opening)).toBe(false);
    expect(
      opened('openai-responses', opening + sse({ type: 'response.output_text.delta', delta: 'a' }, 'response.output_text.delta')),
    ).toBe(true);
    expect(
      opened(
        'openai-responses',
        sse({ type: 'response.reasoning_summary_text.delta', delta: 'hm' }, 'response.reasoning_summary_text.delta'),
      ),
    ).toBe(true);
  });

  it('usage asked for on the caller’s behalf on a chunk with choices: the chunk goes on without it', () => {
    const finish = sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 2 } });
    const text = sse({ choices: [{ index: 0, delta: { content: 'hi' } }] }) + finish + 'data: [DONE]';
    const dropped = new WireStream('openai-chat', true);
    const out = run(dropped, text, 6);
    expect(out).not.toContain('usage');
    expect(out).toContain('"finish_reason":"stop"');
    expect(out.endsWith('data: [DONE]')).toBe(true);
    expect(dropped.usage).toEqual({ inputTokens: 4, outputTokens: 2, totalTokens: 6 });
    expect(run(new WireStream('openai-chat', false), text, 6)).toBe(text);
  });
});
