import { describe, expect, it } from 'vitest';
import { readWireAnswer } from './readWireAnswer.js';
import { usageTokens } from '../tokenCount.js';

/** A plain answer of each format with these usage counts (`undefined` leaves a field out). */
const answers = (input: unknown, output: unknown, total?: unknown) =>
  [
    [
      'openai-chat',
      { choices: [{ message: { content: 'x' } }], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: total } },
    ],
    ['openai-responses', { output: [], usage: { input_tokens: input, output_tokens: output, total_tokens: total } }],
    ['anthropic-messages', { content: [], usage: { input_tokens: input, output_tokens: output } }],
  ] as const;

describe('readWireAnswer usage', () => {
  it('reads input and output; the total is their sum whatever the answer claimed', () => {
    for (const total of [30, 0, 1, -5, 'many', undefined])
      for (const [format, answer] of answers(10, 20, total))
        expect(readWireAnswer(format, answer).usage, `${format} total ${String(total)}`).toEqual({
          inputTokens: 10,
          outputTokens: 20,
          totalTokens: 30,
        });
  });

  const BAD: unknown[] = [-1, 2.5, 1e9, 1e18, 1e300, 2 ** 53 + 2, Number.NaN, '12', null, undefined, {}, [3], true];
  it('a count that is not a token count (or is missing) makes the usage unreadable: undefined, charged the hold', () => {
    for (const bad of BAD) {
      for (const [format, answer] of answers(bad, 20))
        expect(readWireAnswer(format, answer).usage, `${format} input ${String(bad)}`).toBeUndefined();
      for (const [format, answer] of answers(10, bad))
        expect(readWireAnswer(format, answer).usage, `${format} output ${String(bad)}`).toBeUndefined();
    }
  });

  it('Anthropic: cache writes and reads count as input; null ones as none, hostile ones make it unreadable', () => {
    const read = (usage: Record<string, unknown>) => readWireAnswer('anthropic-messages', { content: [], usage }).usage;
    expect(read({ input_tokens: 5, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 4 })).toEqual({
      inputTokens: 10,
      outputTokens: 4,
      totalTokens: 14,
    });
    expect(read({ input_tokens: 5, cache_creation_input_tokens: null, output_tokens: 4 })).toMatchObject({ inputTokens: 5 });
    expect(read({ input_tokens: 5, cache_read_input_tokens: -3, output_tokens: 4 })).toBeUndefined();
    expect(read({ input_tokens: 5, cache_creation_input_tokens: '2', output_tokens: 4 })).toBeUndefined();
  });

  it('usageTokens (both paths): zero or unreadable input and unreadable output charge the hold; an absent output is none', () => {
    expect(usageTokens({ inputTokens: 10, outputTokens: 20 })).toBe(30);
    expect(usageTokens({ inputTokens: 10 })).toBe(10);
    expect(usageTokens(undefined)).toBeUndefined();
    expect(usageTokens({ inputTokens: 0, outputTokens: 20 })).toBeUndefined();
    for (const bad of BAD.filter((b) => b != null)) {
      expect(usageTokens({ inputTokens: bad, outputTokens: 20 })).toBeUndefined();
      expect(usageTokens({ inputTokens: 10, outputTokens: bad })).toBeUndefined();
    }
  });
});
