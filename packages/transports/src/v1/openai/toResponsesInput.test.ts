import { describe, expect, it } from 'vitest';
import { CoreError, resolveConfig } from '@ai-backend/core';
import { toResponsesInput } from './toResponsesInput.js';

const config = resolveConfig({ monitoring: { logging: { level: 'silent' } } });
const resp = (body: Record<string, unknown>, headers = new Headers()) =>
  toResponsesInput({ model: 'openai/gpt-4.1-mini', input: 'hi', ...body }, headers, config);

function refusal(body: unknown): unknown {
  try {
    toResponsesInput(body, new Headers(), config);
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    expect((e as CoreError).appCode).toBe('INVALID_PARAMS');
    return (e as CoreError).details?.param;
  }
  throw new Error('expected a refusal');
}

describe('toResponsesInput: an OpenAI Responses request → ai.generateText input', () => {
  it('a string input is one user message; instructions and system items join into the system prompt', () => {
    const r = resp({
      instructions: 'be brief',
      input: [
        { role: 'developer', content: 'no jokes' },
        { role: 'user', content: 'hi' },
      ],
      max_output_tokens: 7,
      temperature: 0,
    });
    expect(r.input).toEqual({
      provider: 'openai',
      messages: [{ role: 'user', content: 'hi' }],
      systemPrompt: 'be brief\n\nno jokes',
      options: { model: 'gpt-4.1-mini', maxTokens: 7, temperature: 0 },
    });
    expect(r.instructions).toBe('be brief');
    expect(resp({}).input.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('input_text, input_image and input_file parts', () => {
    const r = resp({
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'see' },
            { type: 'input_image', image_url: 'https://x/i.png' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JV', filename: 'a.pdf' },
          ],
        },
      ],
    });
    expect((r.input.messages as any)[0].content).toEqual([
      { type: 'text', text: 'see' },
      { type: 'image', image: 'https://x/i.png' },
      { type: 'file', data: 'data:application/pdf;base64,JV', mediaType: 'application/pdf', filename: 'a.pdf' },
    ]);
  });

  it('function_call and function_call_output items carry the call through, named', () => {
    const r = resp({
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'c1', output: { t: 3 } },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    const m = r.input.messages as any[];
    expect(m[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: { city: 'Oslo' } }],
    });
    expect(m[2]).toEqual({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'get_weather', output: '{"t":3}' }],
    });
    expect(r.input.tools).toEqual([{ name: 'get_weather', parameters: { type: 'object' } }]);
    expect(r.input.toolChoice).toEqual({ type: 'tool', toolName: 'get_weather' });
  });

  it('parallel function_call items join the assistant turn before them, and their outputs one tool message', () => {
    const r = resp({
      input: [
        { role: 'user', content: 'two cities' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'checking' }] },
        { type: 'function_call', call_id: 'c1', name: 'w', arguments: '{"city":"Oslo"}' },
        { type: 'function_call', call_id: 'c2', name: 'w', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'cold' },
        { type: 'function_call_output', call_id: 'c2', output: 'warm' },
        { type: 'function_call', call_id: 'c3', name: 'w', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c3', output: 'mild' },
      ],
    });
    expect(r.input.messages).toEqual([
      { role: 'user', content: 'two cities' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'checking' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'w', input: { city: 'Oslo' } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'w', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'w', output: 'cold' },
          { type: 'tool-result', toolCallId: 'c2', toolName: 'w', output: 'warm' },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c3', toolName: 'w', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c3', toolName: 'w', output: 'mild' }] },
    ]);
  });

  it("an earlier turn's reasoning item is dropped (it belongs to the model that wrote it)", () => {
    const r = resp({
      input: [
        { role: 'user', content: 'think' },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'hm' }], encrypted_content: 'gAAA' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] },
        { role: 'user', content: 'again' },
      ],
    });
    expect(r.input.messages).toEqual([
      { role: 'user', content: 'think' },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('text.format json_schema / json_object become structured output and set json', () => {
    const schema = { type: 'object', properties: {} };
    const r = resp({ text: { format: { type: 'json_schema', name: 'p', schema } } });
    expect(r.input.output).toEqual({ type: 'json', schema, name: 'p' });
    expect(r.json).toBe(true);
    expect(resp({ text: { format: { type: 'text' } } }).json).toBe(false);
  });

  it('BYOK header and user', () => {
    expect(resp({ user: 'u' }, new Headers({ 'x-provider-api-key': 'k' })).input).toMatchObject({
      apiKey: 'k',
      metadata: { name: 'u', type: 'openai-responses' },
    });
  });

  it.each([
    [
      'previous_response_id (the server stores no responses)',
      { model: 'openai', input: 'x', previous_response_id: 'resp_1' },
      'previous_response_id',
    ],
    ['conversation', { model: 'openai', input: 'x', conversation: 'c' }, 'conversation'],
    ['an empty input', { model: 'openai', input: [] }, 'input'],
    ['no input', { model: 'openai' }, 'input'],
    ['non-string instructions', { model: 'openai', input: 'x', instructions: 1 }, 'instructions'],
    ['an unknown item type', { model: 'openai', input: [{ type: 'web_search_call' }] }, 'input[0].type'],
    ['an unknown role', { model: 'openai', input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [
      'arguments that are not JSON',
      { model: 'openai', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{' }] },
      'input[0].arguments',
    ],
    ['a non-function tool', { model: 'openai', input: 'x', tools: [{ type: 'web_search_preview' }] }, 'tools[0]'],
    ['an unknown text.format', { model: 'openai', input: 'x', text: { format: { type: 'xml' } } }, 'text.format'],
    ['a missing model', { input: 'x' }, 'model'],
  ])('refuses %s naming the field', (_n, body, param) => {
    expect(refusal(body)).toBe(param);
  });
});
