import { describe, expect, it } from 'vitest';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { CoreError } from '@ai-backend/core';
import { generateResult as result } from '../../__tests__/generateResult.js';
import { ChunkWriter, completionBody, finishReason, openAiError, openAiParam, servedModel } from './openAiFormat.js';

/** The JSON of each `data:` frame, and whether the stream ended with [DONE]. */
function parseFrames(sse: string): { events: any[]; done: boolean } {
  const datas = sse
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      expect(f.startsWith('data: ')).toBe(true);
      return f.slice(6);
    });
  const done = datas.at(-1) === '[DONE]';
  return { events: datas.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)), done };
}

describe('OpenAI answer bodies', () => {
  it('finishReason maps the AI SDK reasons', () => {
    expect(['stop', 'length', 'tool-calls', 'content-filter', 'error', 'other'].map(finishReason)).toEqual([
      'stop',
      'length',
      'tool_calls',
      'content_filter',
      'stop',
      'stop',
    ]);
  });

  it('servedModel echoes what was asked unless a fallback served', () => {
    expect(servedModel('fast', { provider: 'openai', model: 'm' })).toBe('fast');
    expect(servedModel('fast', { provider: 'anthropic', model: 'c', fallback: true })).toBe('anthropic/c');
  });

  it('completionBody: chat.completion with usage and the ai_backend field', () => {
    const b = completionBody(result({}, { tokenUsage: { tokensUsed: 5 } as never }), 'openai/gpt-4.1-mini');
    expect(b).toMatchObject({
      id: 'chatcmpl-r1',
      object: 'chat.completion',
      model: 'openai/gpt-4.1-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      ai_backend: { provider: 'openai', model: 'gpt-4.1-mini', request_id: 'r1', token_usage: { tokensUsed: 5 } },
    });
    expect(Number.isInteger(b.created)).toBe(true);
  });

  it('completionBody: tool calls with JSON arguments, null content and finish_reason tool_calls', () => {
    const b = completionBody(result({ text: '', toolCalls: [{ toolCallId: 'c1', toolName: 'f', input: { a: 1 } }] }), 'm');
    expect(b.choices[0]!.message).toEqual({
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    });
    expect(b.choices[0]!.finish_reason).toBe('tool_calls');
  });
});

describe('ChunkWriter: ai.streamText events → chat.completion.chunk frames', () => {
  it('role first, text deltas, tool calls indexed, finish reason, usage chunk, [DONE]', () => {
    const w = new ChunkWriter('fast', true);
    const sse =
      w.frames({ type: 'start', requestId: 'r9', provider: 'openai', model: 'gpt' }) +
      w.frames({ type: 'text', delta: 'He' }) +
      w.frames({ type: 'text', delta: 'llo' }) +
      w.frames({ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }) +
      w.frames({ type: 'tool-call', toolCallId: 'c2', toolName: 'g', input: { x: 1 } }) +
      w.frames({ type: 'finish', result: result({ requestId: 'r9' }) });
    const { events, done } = parseFrames(sse);
    expect(done).toBe(true);
    expect(events.every((e) => e.id === 'chatcmpl-r9' && e.object === 'chat.completion.chunk' && e.model === 'fast')).toBe(true);
    expect(events[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(
      events
        .slice(1, 3)
        .map((e) => e.choices[0].delta.content)
        .join(''),
    ).toBe('Hello');
    expect(events[3].choices[0].delta.tool_calls[0]).toMatchObject({ index: 0, id: 'c1' });
    expect(events[4].choices[0].delta.tool_calls[0]).toMatchObject({ index: 1, id: 'c2', function: { arguments: '{"x":1}' } });
    expect(events[5].choices[0].finish_reason).toBe('tool_calls');
    expect(events[5].ai_backend.request_id).toBe('r9');
    // include_usage: every chunk has usage null, then one chunk with no choices carries it.
    expect(events.slice(0, 6).every((e) => e.usage === null)).toBe(true);
    expect(events[6]).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
  });

  it('without include_usage: no usage field and no usage chunk; a fallback renames the model', () => {
    const w = new ChunkWriter('openai/gpt', false);
    const sse =
      w.frames({ type: 'start', requestId: 'r', provider: 'anthropic', model: 'claude', attempts: [{} as never], fallback: true }) +
      w.frames({ type: 'finish', result: result({ finishReason: 'length' }) });
    const { events } = parseFrames(sse);
    expect(events).toHaveLength(2);
    expect(events.every((e) => !('usage' in e) && e.model === 'anthropic/claude')).toBe(true);
    expect(events[1].choices[0].finish_reason).toBe('length');
  });
});

describe('openAiError: any error in OpenAI shape', () => {
  it('maps status to type and the code to a lower-case code, keeps headers', () => {
    const e = openAiError(new CoreError('RATE_LIMITED', 'slow down', { headers: { 'Retry-After': '3' } }));
    expect(e.status).toBe(429);
    expect(e.body).toEqual({ error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limited' } });
    expect(openAiError(new CoreError('PAYMENT_REQUIRED', 'broke')).body.error).toMatchObject({
      type: 'insufficient_quota',
      code: 'payment_required',
    });
    expect(openAiError(new CoreError('UPSTREAM_ERROR', 'x')).body.error.type).toBe('api_error');
    expect(e.headers).toEqual({ 'Retry-After': '3' });
    expect(openAiError(new CoreError('UNAUTHORIZED', 'who')).body.error.type).toBe('authentication_error');
    expect(openAiError(new CoreError('NOT_FOUND', 'x')).body.error.type).toBe('not_found_error');
  });

  it('names the param of a translator refusal and of a core field in OpenAI terms', () => {
    expect(openAiError(new CoreError('INVALID_PARAMS', 'bad', { details: { param: 'messages[0]' } })).body.error).toMatchObject({
      param: 'messages[0]',
      type: 'invalid_request_error',
    });
    expect(openAiError(new CoreError('INVALID_PARAMS', 'bad', { details: { field: 'tools.0.parameters' } })).body.error.param).toBe(
      'tools[0].function.parameters',
    );
  });

  it('hides an unexpected error: no message text, no stack', () => {
    const e = openAiError(new Error('db down at postgres://admin:hunter2@10.0.0.5/prod'));
    expect(e.status).toBe(500);
    expect(e.body.error.type).toBe('api_error');
    expect(JSON.stringify(e.body)).not.toMatch(/hunter2|postgres|at .*\.ts/);
  });

  it('openAiParam renames procedure fields to the request fields', () => {
    expect(openAiParam(['options', 'maxTokens'])).toBe('max_tokens');
    expect(openAiParam(['output', 'schema', 'type'])).toBe('response_format.json_schema.schema.type');
    expect(openAiParam(['messages', 0, 'content'])).toBe('messages[0].content');
    expect(openAiParam(['tools', 2, 'name'])).toBe('tools[2].function.name');
    expect(openAiParam(['fallbacks', 1])).toBe('models.1');
  });

  it("names fields as the request wrote them: max_completion_tokens, the Responses API's fields and flat tools", () => {
    const chat = { names: { 'options.maxTokens': 'max_completion_tokens' } };
    expect(openAiParam(['options', 'maxTokens'], chat)).toBe('max_completion_tokens');
    expect(openAiParam(['options', 'temperature'], chat)).toBe('temperature');
    const responses = {
      names: { 'options.maxTokens': 'max_output_tokens', 'output.schema': 'text.format.schema', output: 'text.format' },
      flatTools: true,
    };
    expect(openAiParam(['options', 'maxTokens'], responses)).toBe('max_output_tokens');
    expect(openAiParam(['output', 'schema', 'type'], responses)).toBe('text.format.schema.type');
    expect(openAiParam(['tools', 1, 'parameters'], responses)).toBe('tools[1].parameters');
    const zod = z.object({ options: z.object({ maxTokens: z.number().min(1) }) }).safeParse({ options: { maxTokens: -1 } }).error;
    const issue = new TRPCError({ code: 'BAD_REQUEST', cause: zod });
    expect(openAiError(issue, chat).body.error).toMatchObject({
      param: 'max_completion_tokens',
      message: expect.stringMatching(/^invalid request: max_completion_tokens: Too small/),
    });
    expect(openAiError(issue).body.error.param).toBe('max_tokens');
  });
});
