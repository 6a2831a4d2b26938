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
    // Writes the answer does not split by cache lifetime are priced as the hour's (cacheWriteExtra).
    expect(read({ input_tokens: 5, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 4 })).toEqual({
      inputTokens: 10,
      outputTokens: 4,
      totalTokens: 14,
      cacheWriteExtra: 2,
      cachedInputTokens: 3,
    });
    expect(read({ input_tokens: 5, cache_creation_input_tokens: null, output_tokens: 4 })).toMatchObject({ inputTokens: 5 });
    expect(read({ input_tokens: 5, cache_read_input_tokens: -3, output_tokens: 4 })).toBeUndefined();
    expect(read({ input_tokens: 5, cache_creation_input_tokens: '2', output_tokens: 4 })).toBeUndefined();
  });

  it('Anthropic: cache writes are priced above the input price, a quarter more for 5 minutes, double for the hour; never charged as tokens', () => {
    const read = (usage: Record<string, unknown>) => readWireAnswer('anthropic-messages', { content: [], usage }).usage;
    const split = (fiveMin: number, hour: number) => ({
      input_tokens: 5,
      cache_creation_input_tokens: fiveMin + hour,
      cache_creation: { ephemeral_5m_input_tokens: fiveMin, ephemeral_1h_input_tokens: hour },
      output_tokens: 4,
    });
    expect(read(split(400, 0))).toEqual({ inputTokens: 405, outputTokens: 4, totalTokens: 409, cacheWriteExtra: 100 });
    expect(read(split(0, 400))).toEqual({ inputTokens: 405, outputTokens: 4, totalTokens: 409, cacheWriteExtra: 400 });
    expect(read(split(401, 100))).toMatchObject({ inputTokens: 506, cacheWriteExtra: 101 + 100 });
    // Reads carry no extra but are cached input (priced at the model's cachedInputRatio); plain input neither.
    expect(read({ input_tokens: 5, cache_read_input_tokens: 300, output_tokens: 4 })).toEqual({
      inputTokens: 305,
      outputTokens: 4,
      totalTokens: 309,
      cachedInputTokens: 300,
    });
    expect(read({ input_tokens: 5, output_tokens: 4 })).toEqual({ inputTokens: 5, outputTokens: 4, totalTokens: 9 });
  });

  it("OpenAI Chat and Responses: the prompt's cached part (`cached_tokens`) is cached input, at most the input; a hostile one is left out", () => {
    const chat = (details: unknown) =>
      readWireAnswer('openai-chat', { choices: [], usage: { prompt_tokens: 100, completion_tokens: 4, prompt_tokens_details: details } })
        .usage;
    const responses = (details: unknown) =>
      readWireAnswer('openai-responses', { output: [], usage: { input_tokens: 100, output_tokens: 4, input_tokens_details: details } })
        .usage;
    for (const read of [chat, responses]) {
      expect(read({ cached_tokens: 64 })).toEqual({ inputTokens: 100, outputTokens: 4, totalTokens: 104, cachedInputTokens: 64 });
      expect(read({ cached_tokens: 1e6 })).toMatchObject({ inputTokens: 100, cachedInputTokens: 100 });
      for (const bad of [0, -5, 1.5, '64', null, undefined])
        expect(read({ cached_tokens: bad })).toEqual({ inputTokens: 100, outputTokens: 4, totalTokens: 104 });
      expect(read(null)).toEqual({ inputTokens: 100, outputTokens: 4, totalTokens: 104 });
    }
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
