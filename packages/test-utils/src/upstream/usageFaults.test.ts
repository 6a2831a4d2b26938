import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, type TestUpstream } from './createTestUpstream.js';

// The hostile-usage and truncation faults, read as raw bytes (what a pass-through reads).
let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 4 });
});
afterAll(() => upstream.close());

const BODIES = {
  chat: ['/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'abcdefgh' }] }],
  responses: ['/v1/responses', { model: 'm', input: 'abcdefgh' }],
  anthropic: ['/v1/messages', { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'abcdefgh' }] }],
} as const;

async function post(which: keyof typeof BODIES, stream: boolean, content?: string): Promise<{ text: string; error?: unknown }> {
  const [path, body] = BODIES[which];
  const withContent = content
    ? which === 'responses'
      ? { ...body, input: content }
      : { ...body, messages: [{ role: 'user', content }] }
    : body;
  const res = await fetch(upstream.url + path, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'x-api-key': 'k', 'content-type': 'application/json' },
    body: JSON.stringify({ ...withContent, stream }),
  });
  let text = '';
  const dec = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += dec.decode(chunk, { stream: true });
    return { text };
  } catch (error) {
    return { text, error };
  }
}
const events = (text: string) =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((e) => /^data: (.*)$/m.exec(e)![1]!)
    .map((d) => (d === '[DONE]' ? d : (JSON.parse(d) as Record<string, any>)));

describe('usage fault', () => {
  it('plain answers carry the given values in each format’s fields', async () => {
    upstream.failNext({ kind: 'usage', values: { input: -3, output: '7', total: undefined } }, 3);
    expect(JSON.parse((await post('chat', false)).text).usage).toEqual({ prompt_tokens: -3, completion_tokens: '7' });
    expect(JSON.parse((await post('responses', false)).text).usage).toMatchObject({ input_tokens: -3, output_tokens: '7' });
    expect(JSON.parse((await post('anthropic', false)).text).usage).toEqual({ input_tokens: -3, output_tokens: '7' });
  });

  it('streams carry them on their usage events, and `again` repeats the event', async () => {
    upstream.failNext({ kind: 'usage', values: { input: 1.5, output: 2 }, again: { input: 9, output: 0 } }, 3);
    const chat = events((await post('chat', true)).text).filter((e) => e !== '[DONE]' && e.usage);
    expect(chat.map((e) => (e as Record<string, any>).usage)).toEqual([
      { prompt_tokens: 1.5, completion_tokens: 2, total_tokens: 6 },
      { prompt_tokens: 9, completion_tokens: 0, total_tokens: 6 },
    ]);
    const responses = events((await post('responses', true)).text) as Array<Record<string, any>>;
    const done = responses.filter((e) => e.type === 'response.completed');
    expect(done.map((e) => [e.response.usage.input_tokens, e.response.usage.output_tokens])).toEqual([
      [1.5, 2],
      [9, 0],
    ]);
    expect(responses.map((e) => e.sequence_number)).toEqual(responses.map((_, i) => i));
    const anthropic = events((await post('anthropic', true)).text) as Array<Record<string, any>>;
    expect(anthropic.find((e) => e.type === 'message_start')!.message.usage.input_tokens).toBe(1.5);
    expect(anthropic.filter((e) => e.type === 'message_delta').map((e) => e.usage)).toEqual([
      { output_tokens: 2, input_tokens: 1.5 },
      { output_tokens: 0, input_tokens: 9 },
    ]);
  });
});

describe('truncate fault', () => {
  it('drops the last frames, then the socket (an error for the reader); clean ends the response', async () => {
    const cut = await post('chat', true, 'x [[upstream:truncate=1]]');
    expect(cut.error).toBeInstanceOf(Error);
    expect(cut.text).toContain('"usage"');
    expect(cut.text).not.toContain('[DONE]');
    const clean = await post('anthropic', true, 'x [[upstream:truncate-clean=2]]');
    expect(clean.error).toBeUndefined();
    expect(clean.text).toContain('content_block_stop');
    expect(clean.text).not.toContain('message_delta');
    expect(upstream.requests.at(-1)!.outcome).toBe('truncate');
  });
});
