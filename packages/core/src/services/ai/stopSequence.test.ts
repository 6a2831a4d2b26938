import { describe, expect, it } from 'vitest';
import { stopSequenceOf } from './stopSequence.js';

describe('stopSequenceOf', () => {
  it("reads the sequence a provider's metadata names (Anthropic's, Bedrock's), for a stop only", () => {
    expect(stopSequenceOf('stop', { anthropic: { stopSequence: '###', usage: {} } })).toBe('###');
    expect(stopSequenceOf('stop', { bedrock: { stopSequence: 'END' } })).toBe('END');
    expect(stopSequenceOf('length', { anthropic: { stopSequence: '###' } })).toBeUndefined();
  });

  it('knows none when the provider names none (OpenAI, Google: a stop is a stop)', () => {
    expect(stopSequenceOf('stop', { anthropic: { stopSequence: null } })).toBeUndefined();
    expect(stopSequenceOf('stop', { openai: { responseId: 'x' } })).toBeUndefined();
    expect(stopSequenceOf('stop', { google: null })).toBeUndefined();
    expect(stopSequenceOf('stop', undefined)).toBeUndefined();
  });
});
