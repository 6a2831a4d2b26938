import { describe, expect, it } from 'vitest';
import { CoreError, resolveConfig } from '@ai-backend/core';
import { toChatInput } from './toChatInput.js';

const config = resolveConfig({ ai: { aliases: { fast: 'openai/gpt-4.1-mini' } }, monitoring: { logging: { level: 'silent' } } });
const none = new Headers();
const chat = (body: Record<string, unknown>, headers = none) =>
  toChatInput({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }], ...body }, headers, config);

/** The CoreError a bad request throws, with the OpenAI `param` it names. */
function refusal(body: unknown): { message: string; param: unknown } {
  try {
    toChatInput(body, none, config);
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    const err = e as CoreError;
    expect(err.appCode).toBe('INVALID_PARAMS');
    return { message: err.message, param: (err.details as { param?: unknown } | undefined)?.param };
  }
  throw new Error('expected a refusal');
}

describe('toChatInput: an OpenAI chat completions request → ai.generateText input', () => {
  it('a model name longer than any is refused as too long, a missing one as required', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(refusal({ model: 'x'.repeat(100_000), messages })).toEqual({
      message: expect.stringMatching(/model is at most 300 characters/),
      param: 'model',
    });
    expect(refusal({ messages })).toEqual({ message: expect.stringMatching(/model is required/), param: 'model' });
  });

  it('translates provider/model, messages, limits and flags', () => {
    const r = chat({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      max_tokens: 20,
      temperature: 0.5,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(r).toEqual({
      input: {
        provider: 'openai',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
        options: { model: 'gpt-4.1-mini', maxTokens: 20, temperature: 0.5 },
      },
      model: 'openai/gpt-4.1-mini',
      stream: true,
      includeUsage: true,
    });
  });

  it('prefers max_completion_tokens, maps developer to system, joins text parts', () => {
    const r = chat({
      max_tokens: 5,
      max_completion_tokens: 9,
      messages: [
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'user', content: 'x' },
      ],
    });
    expect((r.input.options as any).maxTokens).toBe(9);
    expect((r.input.messages as any)[0]).toEqual({ role: 'system', content: 'ab' });
  });

  it('keeps an alias as the answer model and resolves it for the call', () => {
    const r = chat({ model: 'fast' });
    expect(r.model).toBe('fast');
    expect(r.input.provider).toBe('openai');
    expect((r.input.options as any).model).toBe('gpt-4.1-mini');
  });

  it('image_url and file parts become image and file parts', () => {
    const r = chat({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'see' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JV', filename: 'a.pdf' } },
          ],
        },
      ],
    });
    expect((r.input.messages as any)[0].content).toEqual([
      { type: 'text', text: 'see' },
      { type: 'image', image: 'data:image/png;base64,AA' },
      { type: 'file', data: 'data:application/pdf;base64,JV', mediaType: 'application/pdf', filename: 'a.pdf' },
    ]);
  });

  it('an assistant tool call and its tool result carry the tool name the result message does not', () => {
    const r = chat({
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '{"t":3}' },
      ],
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
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
    expect(r.input.tools).toEqual([{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }]);
    expect(r.input.toolChoice).toEqual({ type: 'tool', toolName: 'get_weather' });
  });

  it('response_format json_schema and json_object become structured output', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(chat({ response_format: { type: 'json_schema', json_schema: { name: 'p', schema } } }).input.output).toEqual({
      type: 'json',
      schema,
      name: 'p',
    });
    expect(chat({ response_format: { type: 'json_object' } }).input.output).toEqual({ type: 'json', schema: { type: 'object' } });
    expect(chat({ response_format: { type: 'text' } }).input.output).toBeUndefined();
  });

  it('takes BYOK from x-provider-api-key, fallbacks from models (without the primary), user as metadata', () => {
    const r = chat(
      { models: ['openai/gpt-4.1-mini', 'anthropic/claude-sonnet-4-5'], user: 'u-1' },
      new Headers({ 'x-provider-api-key': 'sk-own' }),
    );
    expect(r.input).toMatchObject({
      apiKey: 'sk-own',
      fallbacks: ['anthropic/claude-sonnet-4-5'],
      metadata: { name: 'u-1', type: 'openai-compatible' },
    });
    expect(chat({}).input.apiKey).toBeUndefined();
  });

  it.each([
    ['a body that is not an object', [1], undefined],
    ['a missing model', { messages: [{ role: 'user', content: 'x' }] }, 'model'],
    ['empty messages', { model: 'openai/x', messages: [] }, 'messages'],
    ['n other than 1', { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], n: 2 }, 'n'],
    ['a string stream flag', { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], stream: 'true' }, 'stream'],
    [
      'an unknown response_format',
      { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'xml' } },
      'response_format',
    ],
    ['a bad tool_choice', { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], tool_choice: 'always' }, 'tool_choice'],
    ['an unknown role', { model: 'openai/x', messages: [{ role: 'robot', content: 'x' }] }, 'messages[0]'],
    [
      'an unsupported user part',
      { model: 'openai/x', messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] },
      'messages[0].content[0]',
    ],
    [
      'tool arguments that are not JSON',
      { model: 'openai/x', messages: [{ role: 'assistant', tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{' } }] }] },
      'messages[0]',
    ],
    [
      'a tool result for no earlier call',
      { model: 'openai/x', messages: [{ role: 'tool', tool_call_id: 'zz', content: 'x' }] },
      'messages[0]',
    ],
    ['a non-function tool', { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search' }] }, 'tools[0]'],
    ['models that are not strings', { model: 'openai/x', messages: [{ role: 'user', content: 'x' }], models: [1] }, 'models'],
  ])('refuses %s naming the OpenAI param', (_name, body, param) => {
    const r = refusal(body);
    expect(r.param).toBe(param);
    expect(r.message.length).toBeGreaterThan(0);
  });
});
