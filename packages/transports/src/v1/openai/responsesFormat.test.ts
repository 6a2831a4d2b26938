import { describe, expect, it } from 'vitest';
import { generateResult } from '../../__tests__/generateResult.js';
import { sseEvents } from '../../__tests__/sseEvents.js';
import { responseBody, ResponseStreamWriter } from './responsesFormat.js';

describe('responseBody', () => {
  it('a completed response: one message item, usage with details, never the instructions', () => {
    const b = responseBody(generateResult(), 'openai/gpt-4.1-mini');
    expect(b).toMatchObject({
      id: 'resp_r1',
      object: 'response',
      status: 'completed',
      instructions: null,
      incomplete_details: null,
      model: 'openai/gpt-4.1-mini',
      output: [
        {
          type: 'message',
          id: 'msg_r1',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello', annotations: [] }],
        },
      ],
      usage: {
        input_tokens: 3,
        output_tokens: 2,
        total_tokens: 5,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
      ai_backend: { request_id: 'r1' },
    });
  });

  it('tool calls become function_call items (no empty message), and length makes it incomplete', () => {
    const b = responseBody(
      generateResult({ text: '', finishReason: 'length', toolCalls: [{ toolCallId: 'c1', toolName: 'f', input: { a: 1 } }] }),
      'm',
    );
    expect(b.output).toEqual([{ type: 'function_call', id: 'fc_c1', call_id: 'c1', name: 'f', arguments: '{"a":1}', status: 'completed' }]);
    expect(b.status).toBe('incomplete');
    expect(b.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });
});

describe('ResponseStreamWriter: ai.streamText events → Responses streaming events', () => {
  it('created, in_progress, a message item with deltas, a function call, completed; sequence numbers count up from 0', () => {
    const w = new ResponseStreamWriter('fast');
    const sse =
      w.frames({ type: 'start', requestId: 'r3', provider: 'openai', model: 'gpt' }) +
      w.frames({ type: 'text', delta: 'He' }) +
      w.frames({ type: 'text', delta: 'llo' }) +
      w.frames({ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: { x: 1 } }) +
      w.frames({
        type: 'finish',
        result: generateResult({ requestId: 'r3', toolCalls: [{ toolCallId: 'c1', toolName: 'f', input: { x: 1 } }] }),
      });
    const ev = sseEvents(sse);
    expect(ev.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(ev.map((e) => e.data.sequence_number)).toEqual(ev.map((_, i) => i));
    expect(ev[0]!.data.response).toMatchObject({ id: 'resp_r3', status: 'in_progress', model: 'fast', output: [], usage: null });
    expect(ev[6]!.data.text).toBe('Hello');
    expect(ev[10]!.data).toMatchObject({ output_index: 1, delta: '{"x":1}' });
    const done = ev.at(-1)!.data.response;
    expect(done.status).toBe('completed');
    expect(done.output.map((o: { type: string }) => o.type)).toEqual(['message', 'function_call']);
    expect(done.output[0].content[0].text).toBe('Hello');
    expect(done.usage.total_tokens).toBe(5);
  });

  it('a response cut at max tokens ends with response.incomplete; errorFrame continues the numbering', () => {
    const w = new ResponseStreamWriter('m');
    const head = sseEvents(w.frames({ type: 'start', requestId: 'r', provider: 'openai', model: 'gpt' }));
    const err = sseEvents(w.errorFrame({ message: 'upstream failed', code: 'upstream_error', param: null }));
    expect(err[0]).toEqual({
      event: 'error',
      data: { type: 'error', sequence_number: head.length, code: 'upstream_error', message: 'upstream failed', param: null },
    });
    const w2 = new ResponseStreamWriter('m');
    w2.frames({ type: 'start', requestId: 'r', provider: 'openai', model: 'gpt' });
    expect(sseEvents(w2.frames({ type: 'finish', result: generateResult({ finishReason: 'length' }) })).at(-1)!.event).toBe(
      'response.incomplete',
    );
  });
});
