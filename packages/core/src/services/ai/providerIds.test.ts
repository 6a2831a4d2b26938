import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GenerateTextInputSchema } from '../../routers/ai/aiRouter.js';
import { KeyProviderInput, ProviderInput } from './providerIds.js';

describe('provider id input schemas', () => {
  it('map provider_a..d to the real ids and refuse anything else', () => {
    expect(['provider_a', 'provider_b', 'provider_c', 'provider_d'].map((p) => ProviderInput.parse(p))).toEqual([
      'anthropic',
      'openai',
      'google',
      'openrouter',
    ]);
    expect(ProviderInput.parse('google')).toBe('google');
    expect(ProviderInput.safeParse('toString').success).toBe(false);
    expect(KeyProviderInput.safeParse('provider_d').success).toBe(false);
    expect(KeyProviderInput.parse('provider_c')).toBe('google');
  });

  it('generateText input converts to JSON Schema (MCP tools) in both directions', () => {
    for (const io of ['input', 'output'] as const) {
      const schema = z.toJSONSchema(GenerateTextInputSchema, { io, unrepresentable: 'any' }) as unknown as {
        properties: { provider: { enum?: string[] } } & Record<string, unknown>;
        required?: string[];
      };
      expect(schema.properties.provider.enum).toEqual(['anthropic', 'openai', 'google', 'openrouter']);
      // content+systemPrompt or messages: the pairing is checked by the schema's refinement.
      expect(schema.required ?? []).toEqual([]);
      expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['content', 'systemPrompt', 'messages', 'tools', 'output']));
    }
  });
});
