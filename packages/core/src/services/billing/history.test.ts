import { describe, expect, it } from 'vitest';
import { addToDay } from './history.js';

describe('addToDay', () => {
  const item = (model: string, mode: 'platform' | 'byok') => ({
    id: 'e',
    at: '2026-11-29T00:00:00.000Z',
    mode,
    provider: 'openai',
    model,
    tokensUsed: 10,
    tokensCharged: 11,
    platformFee: 1,
    estimatedCostUsd: 0.25,
  });

  it('leaves the row it was given as it was and writes the same figures, in the same key order, as a whole-row copy did', () => {
    const first = addToDay(undefined, item('a', 'platform'));
    const legacy = structuredClone(first);
    delete legacy.byMode; // a row written before costs were recorded
    const before = structuredClone(first);
    const second = addToDay(first, item('b', 'byok'));
    expect(first).toStrictEqual(before);
    expect(JSON.stringify(second)).toBe(
      JSON.stringify({
        totals: {
          requests: 2,
          tokensUsed: 20,
          tokensCharged: 22,
          platformFee: 2,
          estimatedCostUsd: 0.5,
          platformRequests: 1,
          byokRequests: 1,
        },
        byProvider: { openai: { requests: 2, tokensUsed: 20, tokensCharged: 22, platformFee: 2, estimatedCostUsd: 0.5 } },
        byModel: {
          'openai/a': { requests: 1, tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.25 },
          'openai/b': { requests: 1, tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.25 },
        },
        byMode: {
          platform: { requests: 1, tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.25 },
          byok: { requests: 1, tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.25 },
        },
      }),
    );
    const fromLegacy = addToDay(legacy, item('a', 'byok'));
    expect(fromLegacy.byMode).toEqual({
      platform: { requests: 0, tokensUsed: 0, tokensCharged: 0, platformFee: 0, estimatedCostUsd: 0 },
      byok: { requests: 1, tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.25 },
    });
    expect(legacy.byMode).toBeUndefined();
  });
});
