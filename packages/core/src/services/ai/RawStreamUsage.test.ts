import { describe, expect, it } from 'vitest';
import { RawStreamUsage } from './RawStreamUsage.js';

describe('RawStreamUsage', () => {
  it('keeps the largest counts of repeated usage events, in each wire shape', () => {
    const read = (...events: unknown[]) => {
      const r = new RawStreamUsage();
      for (const e of events) r.note(e);
      return [r.input, r.output];
    };
    expect(read({ usage: { prompt_tokens: 7, completion_tokens: 3 } }, { usage: { prompt_tokens: 1, completion_tokens: 1 } })).toEqual([
      7, 3,
    ]);
    expect(
      read(
        { type: 'response.completed', response: { usage: { input_tokens: 5, output_tokens: 9 } } },
        { type: 'response.completed', response: { usage: { input_tokens: 0, output_tokens: 0 } } },
      ),
    ).toEqual([5, 9]);
    expect(
      read(
        { type: 'message_start', message: { usage: { input_tokens: 4, cache_read_input_tokens: 2, output_tokens: 1 } } },
        { type: 'message_delta', usage: { output_tokens: 8 } },
        { type: 'message_delta', usage: { output_tokens: 2 } },
      ),
    ).toEqual([6, 8]);
    expect(read({ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 2 } })).toEqual([3, 6]);
  });

  it('ignores what is not a token count and events without usage', () => {
    const r = new RawStreamUsage();
    for (const e of [null, 'x', [], { usage: null }, { usage: { prompt_tokens: -4, completion_tokens: '9' } }, { choices: [] }]) r.note(e);
    expect([r.input, r.output]).toEqual([0, 0]);
  });
});
