import { describe, expect, it } from 'vitest';
import { ModelRegistry } from './ModelRegistry.js';

/** USD for `tokens` at `perMTok`, as the registry rounds it. */
const usd = (...parts: Array<[tokens: number, perMTok: number]>) =>
  Math.round((parts.reduce((s, [t, p]) => s + t * p, 0) / 1_000_000) * 1e10) / 1e10;

describe('ModelRegistry.estimateCostUsd', () => {
  it('prices a call at the standard prices up to the long-context threshold, and every token of it past it', () => {
    const r = new ModelRegistry();
    // Gemini 2.5 Pro: $1.25 / $10 per million up to 200k input tokens, $2.50 / $15 above.
    expect(r.estimateCostUsd('google', 'gemini-2.5-pro', 200_000, 1_000)).toBe(usd([200_000, 1.25], [1_000, 10]));
    expect(r.estimateCostUsd('google', 'gemini-2.5-pro', 300_000, 1_000)).toBe(usd([300_000, 2.5], [1_000, 15]));
    expect(r.estimateCostUsd('openrouter', 'google/gemini-2.5-pro', 300_000, 0)).toBe(usd([300_000, 2.5]));
    // Claude Sonnet's 1M context (Anthropic's beta): $6 / $22.50 above 200k.
    expect(r.estimateCostUsd('anthropic', 'claude-sonnet-4-5', 250_000, 2_000)).toBe(usd([250_000, 6], [2_000, 22.5]));
    // A model billed alike at every length has no tier.
    expect(r.estimateCostUsd('openai', 'gpt-4.1', 900_000, 0)).toBe(usd([900_000, 2]));
  });

  it("takes an operator's long-context prices from ai.models, for a bundled model or one of their own", () => {
    const r = new ModelRegistry({
      openai: {
        'my-long': {
          inputUsdPerMTok: 1,
          outputUsdPerMTok: 2,
          longContext: { aboveInputTokens: 1_000, inputUsdPerMTok: 3, outputUsdPerMTok: 4 },
        },
      },
      google: { 'gemini-2.5-pro': { longContext: { aboveInputTokens: 100_000, inputUsdPerMTok: 5, outputUsdPerMTok: 20 } } },
    });
    expect(r.estimateCostUsd('openai', 'my-long', 1_000, 10)).toBe(usd([1_000, 1], [10, 2]));
    expect(r.estimateCostUsd('openai', 'my-long', 1_001, 10)).toBe(usd([1_001, 3], [10, 4]));
    expect(r.estimateCostUsd('google', 'gemini-2.5-pro', 150_000, 0)).toBe(usd([150_000, 5]));
  });

  it("prices input read from the provider's prompt cache at the model's cachedInputRatio, else as input", () => {
    const r = new ModelRegistry({
      openai: {
        'my-own': { inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
        'my-cached': { inputUsdPerMTok: 1, outputUsdPerMTok: 2, cachedInputRatio: 0.2 },
      },
    });
    // gpt-5: $1.25 input, cached at a tenth; gpt-4.1: $2, a quarter; gpt-4o: $2.50, half; Gemini 2.5 Flash: $0.30, a quarter.
    expect(r.estimateCostUsd('openai', 'gpt-5', 1_000, 10, { readTokens: 800 })).toBe(usd([200, 1.25], [800, 0.125], [10, 10]));
    expect(r.estimateCostUsd('openai', 'gpt-4.1', 1_000, 0, { readTokens: 800 })).toBe(usd([200, 2], [800, 0.5]));
    expect(r.estimateCostUsd('openai', 'gpt-4o', 1_000, 0, { readTokens: 800 })).toBe(usd([200, 2.5], [800, 1.25]));
    expect(r.estimateCostUsd('google', 'gemini-2.5-flash', 1_000, 0, { readTokens: 800 })).toBe(usd([200, 0.3], [800, 0.075]));
    // Past the long-context threshold (counted with the cached input), the ratio applies to those prices.
    expect(r.estimateCostUsd('google', 'gemini-2.5-pro', 300_000, 0, { readTokens: 250_000 })).toBe(usd([50_000, 2.5], [250_000, 0.625]));
    // An operator's model: its own ratio, or none (cached input priced as input, never below the bill).
    expect(r.estimateCostUsd('openai', 'my-cached', 1_000, 0, { readTokens: 500 })).toBe(usd([500, 1], [500, 0.2]));
    expect(r.estimateCostUsd('openai', 'my-own', 1_000, 0, { readTokens: 500 })).toBe(usd([1_000, 1]));
    // More reads than input (a hostile count) price no more of it below the input price than there is.
    expect(r.estimateCostUsd('openai', 'gpt-5', 1_000, 0, { readTokens: 5_000 })).toBe(usd([1_000, 0.125]));
  });
});
