import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadAiSdk, loadProviderSdk } from './aiSdk.js';

// loadAiSdk warms the SDK's message schema (see warmPromptSchema): validation must be unchanged.
describe('loadAiSdk', () => {
  it('leaves the SDK message validation as it was: valid messages pass, invalid ones fail', async () => {
    const { ai } = await loadAiSdk();
    const messages = z.array(ai.modelMessageSchema);
    expect(messages.safeParse([{ role: 'user', content: 'hello' }]).success).toBe(true);
    expect(
      messages.safeParse([
        { role: 'system', content: 'terse' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }], providerOptions: { openai: { a: [1, { b: null }] } } },
      ]).success,
    ).toBe(true);
    expect(messages.safeParse([{ role: 'user', content: 42 }]).success).toBe(false);
    expect(messages.safeParse([{ role: 'nobody', content: 'x' }]).success).toBe(false);
    // A providerOptions value that is not JSON (a function) is still refused.
    expect(messages.safeParse([{ role: 'user', content: 'x', providerOptions: { openai: { f: () => 1 } } }]).success).toBe(false);
  });
});

describe('loadProviderSdk', () => {
  it("imports one provider's package once, with the SDK itself", async () => {
    const first = loadProviderSdk('openai');
    expect(loadProviderSdk('openai')).toBe(first);
    const openai = await first;
    expect(typeof openai.createOpenAI).toBe('function');
    expect(typeof (await loadProviderSdk('anthropic')).createAnthropic).toBe('function');
    expect(typeof (await loadAiSdk()).ai.generateText).toBe('function');
  });
});
