import { describe, expect, it } from 'vitest';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { CoreError } from '@ai-backend/core';
import { generateResult } from '../../__tests__/generateResult.js';
import { sseEvents } from '../../__tests__/sseEvents.js';
import { anthropicError, anthropicParam, messageBody, MessageStreamWriter, stopOf } from './anthropicFormat.js';

describe('Anthropic answer bodies', () => {
  it('stopOf: tool_use when a tool was called, max_tokens for length, stop_sequence when one was named, else end_turn', () => {
    const reason = (r: string, tools: number, seq?: string) => stopOf(r, tools, seq).stop_reason;
    expect(reason('stop', 1)).toBe('tool_use');
    expect(reason('tool-calls', 0)).toBe('tool_use');
    expect(reason('length', 0)).toBe('max_tokens');
    expect(reason('content-filter', 0)).toBe('end_turn');
    expect(reason('stop', 0)).toBe('end_turn');
    expect(stopOf('stop', 0, '###')).toEqual({ stop_reason: 'stop_sequence', stop_sequence: '###' });
    // A tool call outranks a named sequence; the sequence goes only with stop_reason stop_sequence.
    expect(stopOf('tool-calls', 1, '###')).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('messageBody and message_delta carry the stop sequence core names', () => {
    const r = generateResult({ stopSequence: 'END' });
    expect(messageBody(r, 'm')).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    const w = new MessageStreamWriter('m');
    const ev = sseEvents(
      w.frames({ type: 'start', requestId: 'r', provider: 'anthropic', model: 'c' }) + w.frames({ type: 'finish', result: r }),
    );
    expect(ev[0]!.data.message).toMatchObject({ stop_reason: null, stop_sequence: null });
    expect(ev.find((e) => e.event === 'message_delta')!.data.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it('messageBody: text and tool_use blocks, usage, the requested model, the ai_backend field', () => {
    const b = messageBody(generateResult({ toolCalls: [{ toolCallId: 't1', toolName: 'f', input: { a: 1 } }] }), 'claude-sonnet-4-5');
    expect(b).toMatchObject({
      id: 'msg_r1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'text', text: 'Hello' },
        { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 2 },
      ai_backend: { provider: 'openai', request_id: 'r1' },
    });
    expect(messageBody(generateResult({ text: '' }), 'm').content).toEqual([]);
  });
});

describe('MessageStreamWriter: ai.streamText events → Anthropic events', () => {
  it('message_start, one text block across deltas, a tool_use block, message_delta with usage, message_stop', () => {
    const w = new MessageStreamWriter('claude');
    const sse =
      w.frames({ type: 'start', requestId: 'r2', provider: 'anthropic', model: 'claude-sonnet-4-5' }) +
      w.frames({ type: 'text', delta: 'He' }) +
      w.frames({ type: 'text', delta: 'llo' }) +
      w.frames({ type: 'tool-call', toolCallId: 't1', toolName: 'f', input: { x: 1 } }) +
      w.frames({ type: 'text', delta: 'after' }) +
      w.frames({ type: 'finish', result: generateResult({ finishReason: 'stop' }) });
    const ev = sseEvents(sse);
    expect(ev.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(ev[0]!.data.message).toMatchObject({ id: 'msg_r2', model: 'claude', content: [], stop_reason: null });
    expect(ev[1]!.data).toMatchObject({ index: 0, content_block: { type: 'text', text: '' } });
    expect(ev[3]!.data.delta).toEqual({ type: 'text_delta', text: 'llo' });
    expect(ev[5]!.data).toMatchObject({ index: 1, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } });
    expect(ev[6]!.data.delta).toEqual({ type: 'input_json_delta', partial_json: '{"x":1}' });
    expect(ev[8]!.data.index).toBe(2);
    expect(ev[11]!.data).toMatchObject({
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 3, output_tokens: 2 },
    });
  });

  it('a fallback that served names itself as the model', () => {
    const w = new MessageStreamWriter('claude');
    const [start] = sseEvents(
      w.frames({ type: 'start', requestId: 'r', provider: 'openai', model: 'gpt', attempts: [{} as never], fallback: true }),
    );
    expect(start!.data.message.model).toBe('openai/gpt');
  });
});

describe('anthropicError', () => {
  it.each([
    ['UNAUTHORIZED', 401, 'authentication_error'],
    ['PAYMENT_REQUIRED', 402, 'billing_error'],
    ['FORBIDDEN', 403, 'permission_error'],
    ['NOT_FOUND', 404, 'not_found_error'],
    ['PAYLOAD_TOO_LARGE', 413, 'request_too_large'],
    ['RATE_LIMITED', 429, 'rate_limit_error'],
    ['UPSTREAM_TIMEOUT', 504, 'timeout_error'],
    ['UNAVAILABLE', 503, 'overloaded_error'],
    ['UPSTREAM_ERROR', 502, 'api_error'],
    ['INVALID_PARAMS', 400, 'invalid_request_error'],
  ] as const)('%s → %i %s', (code, status, type) => {
    const e = anthropicError(new CoreError(code, 'why'));
    expect(e.status).toBe(status);
    expect(e.body).toEqual({ type: 'error', error: { type, message: 'why' } });
  });

  it('keeps Retry-After and hides an unexpected error’s text', () => {
    expect(anthropicError(new CoreError('RATE_LIMITED', 'x', { headers: { 'Retry-After': '2' } })).headers).toEqual({ 'Retry-After': '2' });
    const e = anthropicError(new Error('secret at /srv/app/db.ts:12'));
    expect(e.status).toBe(500);
    expect(JSON.stringify(e.body)).not.toContain('secret');
  });
});

describe('anthropicParam: procedure fields under the names of an Anthropic request', () => {
  it('renames options, system, tool_choice and input_schema; keeps dotted message paths', () => {
    expect(anthropicParam(['options', 'temperature'])).toBe('temperature');
    expect(anthropicParam(['options', 'maxTokens'])).toBe('max_tokens');
    expect(anthropicParam(['options', 'stopSequences', 3])).toBe('stop_sequences.3');
    expect(anthropicParam(['systemPrompt'])).toBe('system');
    expect(anthropicParam(['tools', 0, 'parameters', 'type'])).toBe('tools.0.input_schema.type');
    expect(anthropicParam(['messages', 2, 'content'])).toBe('messages.2.content');
    const zod = z.object({ options: z.object({ temperature: z.number().max(2) }) }).safeParse({ options: { temperature: 7 } }).error;
    const issue = new TRPCError({ code: 'BAD_REQUEST', cause: zod });
    expect(anthropicError(issue).body.error.message).toMatch(/^invalid request: temperature: Too big/);
  });
});
