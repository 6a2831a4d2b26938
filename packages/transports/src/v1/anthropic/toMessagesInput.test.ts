import { describe, expect, it } from 'vitest';
import { CoreError, resolveConfig } from '@ai-backend/core';
import { countTokens, modelFields, toMessagesInput } from './toMessagesInput.js';

const config = resolveConfig({ ai: { aliases: { fast: 'openai/gpt-4.1-mini' } }, monitoring: { logging: { level: 'silent' } } });
const msg = (body: Record<string, unknown>, headers = new Headers()) =>
  toMessagesInput(
    { model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...body },
    headers,
    config,
  );

function refusal(body: unknown): { message: string; param: unknown } {
  try {
    toMessagesInput(body, new Headers(), config);
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    expect((e as CoreError).appCode).toBe('INVALID_PARAMS');
    return { message: (e as CoreError).message, param: (e as CoreError).details?.param };
  }
  throw new Error('expected a refusal');
}

describe('modelFields', () => {
  it('a bare model id on /v1/messages is Anthropic’s (Claude Code sends claude-…)', () => {
    expect(modelFields(config, 'claude-sonnet-4-5', 'anthropic')).toEqual({
      input: { provider: 'anthropic' },
      options: { model: 'claude-sonnet-4-5' },
    });
  });
  it('provider/model, a bare provider and an alias resolve as everywhere else', () => {
    expect(modelFields(config, 'openai/gpt-4.1-mini', 'anthropic')).toEqual({
      input: { provider: 'openai' },
      options: { model: 'gpt-4.1-mini' },
    });
    expect(modelFields(config, 'openai', 'anthropic')).toEqual({ input: { provider: 'openai' }, options: {} });
    expect(modelFields(config, 'fast', 'anthropic')).toEqual({ input: { provider: 'openai' }, options: { model: 'gpt-4.1-mini' } });
  });
});

describe('toMessagesInput: an Anthropic Messages request → ai.generateText input', () => {
  it('a model name longer than any is refused as too long, a missing one as required', () => {
    const base = { max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
    expect(refusal({ ...base, model: 'c'.repeat(301) })).toEqual({
      message: expect.stringMatching(/model is at most 300 characters/),
      param: 'model',
    });
    expect(refusal(base)).toEqual({ message: expect.stringMatching(/model: Field required/), param: 'model' });
  });

  it('translates model, max_tokens, temperature, system blocks and stream', () => {
    const r = msg({
      system: [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two' },
      ],
      temperature: 0.2,
      stream: true,
    });
    expect(r).toEqual({
      input: {
        provider: 'anthropic',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        systemPrompt: 'one\n\ntwo',
        options: { model: 'claude-sonnet-4-5', maxTokens: 16, temperature: 0.2 },
      },
      model: 'anthropic/claude-sonnet-4-5',
      stream: true,
    });
  });

  it('tool_use and tool_result blocks become a tool call and a tool message with the tool name; thinking is dropped', () => {
    const r = msg({
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: '…' },
            { type: 'text', text: 'let me check' },
            { type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: '3C' }], is_error: true },
            { type: 'text', text: 'and tomorrow?' },
          ],
        },
      ],
      tools: [{ name: 'get_weather', description: 'W', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
    });
    const m = r.input.messages as any[];
    expect(m[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'let me check' },
        { type: 'tool-call', toolCallId: 't1', toolName: 'get_weather', input: { city: 'Oslo' } },
      ],
    });
    expect(m[2]).toEqual({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 't1', toolName: 'get_weather', output: '3C', isError: true }],
    });
    expect(m[3]).toEqual({ role: 'user', content: [{ type: 'text', text: 'and tomorrow?' }] });
    expect(r.input.tools).toEqual([{ name: 'get_weather', description: 'W', parameters: { type: 'object' } }]);
    expect(r.input.toolChoice).toBe('required');
    expect(msg({ tool_choice: { type: 'tool', name: 'f' } }).input.toolChoice).toEqual({ type: 'tool', toolName: 'f' });
  });

  it('image and document blocks (base64 and url) become image and file parts', () => {
    const r = msg({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA' } },
            { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } },
          ],
        },
      ],
    });
    expect((r.input.messages as any)[0].content).toEqual([
      { type: 'image', image: 'AA', mediaType: 'image/png' },
      { type: 'file', data: 'https://x/a.pdf', mediaType: 'application/pdf' },
    ]);
  });

  it('BYOK from x-provider-api-key and metadata.user_id', () => {
    const r = msg({ metadata: { user_id: 'u-7' } }, new Headers({ 'x-provider-api-key': 'sk-own' }));
    expect(r.input).toMatchObject({ apiKey: 'sk-own', metadata: { name: 'u-7', type: 'anthropic-messages' } });
  });

  it.each([
    ['a missing max_tokens', { model: 'anthropic', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    ['a fractional max_tokens', { model: 'anthropic', max_tokens: 1.5, messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    ['a missing model', { max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, 'model'],
    ['a system role in messages', { model: 'anthropic', max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }, 'messages.0.role'],
    [
      'a server tool',
      {
        model: 'anthropic',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      },
      'tools.0',
    ],
    [
      'a media block without a usable source',
      {
        model: 'anthropic',
        max_tokens: 5,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }],
      },
      'messages.0.content.0.source',
    ],
    [
      'an unknown assistant block',
      { model: 'anthropic', max_tokens: 5, messages: [{ role: 'assistant', content: [{ type: 'server_tool_use' }] }] },
      'messages.0.content.0',
    ],
    ['a string stream flag', { model: 'anthropic', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream'],
  ])('refuses %s naming the field', (_n, body, param) => {
    expect(refusal(body).param).toBe(param);
  });
});

describe('countTokens: the estimate the server meters with', () => {
  it('UTF-8 bytes of system, texts and tools over 4, plus 2,000 per image or document', () => {
    const text = (content: unknown) => ({ model: 'anthropic', max_tokens: 5, messages: [{ role: 'user', content }] });
    expect(countTokens({ ...text('abcdefgh'), system: 'abcd' }, config)).toBe(3);
    expect(countTokens(text('€€€€'), config)).toBe(3);
    expect(
      countTokens(
        text([
          { type: 'text', text: 'abcd' },
          { type: 'image', source: { type: 'url', url: 'https://x/i.png' } },
        ]),
        config,
      ),
    ).toBe(2001);
    const withTool = countTokens({ ...text('abcd'), tools: [{ name: 'f', input_schema: { type: 'object' } }] }, config);
    expect(withTool).toBeGreaterThan(1);
  });
});
