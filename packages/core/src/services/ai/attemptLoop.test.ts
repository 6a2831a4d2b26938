import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { alice, createAiHarness, rejection, type AiHarness } from '../../routers/ai/__tests__/aiHarness.js';
import { loadAiSdk, loadProviderSdk } from './aiSdk.js';

beforeAll(() => Promise.all([loadAiSdk(), loadProviderSdk('openai')]), 60_000);

let h: AiHarness;
afterEach(() => h.close());

/** The backoff before a fallback is at least `backoffMs` (doubled per attempt, halved by jitter). */
const BACKOFF_MS = 5_000;

describe('the attempt loop: a client that leaves during the backoff before a fallback', () => {
  for (const kind of ['generateText', 'streamText'] as const) {
    it(`${kind}: ends the call at once (not after the backoff), releases the hold, never calls the fallback`, async () => {
      h = await createAiHarness({ ai: { retry: { backoffMs: BACKOFF_MS, maxBackoffMs: 2 * BACKOFF_MS } } });
      await h.credit(alice.sub, 100_000);
      const ac = new AbortController();
      const input = {
        content: 'hi [[upstream:503]]',
        systemPrompt: 's',
        provider: 'openai' as const,
        fallbacks: ['anthropic'],
        options: { maxTokens: 50 },
      };
      const caller = h.caller(alice, ac.signal);
      const run =
        kind === 'generateText'
          ? caller.ai.generateText(input)
          : (async () => {
              for await (const _ of await caller.ai.streamText(input)) void _;
            })();
      const outcome = rejection(run);
      // The first target failed and the loop read its answer: it is now waiting before the fallback.
      // (The upstream's request count alone is not enough: a client that leaves while the request
      // is still out pays the estimated input of a stream, by design, docs/ai.md "Streaming and metering".)
      await waitFor(() => h.logs.some((l) => l.includes('ai: upstream call failed')));
      expect(h.upstream.requests).toHaveLength(1);
      const left = performance.now();
      ac.abort();
      const err = await outcome;
      const ms = performance.now() - left;
      expect(err).toMatchObject({ appCode: expect.stringMatching(/^(CANCELLED|UPSTREAM_ERROR)$/) });
      // Well below the 5 s backoff it would otherwise wait, with room for a loaded machine.
      expect(ms).toBeLessThan(BACKOFF_MS / 2);
      expect(h.upstream.requests).toHaveLength(1);
      await waitFor(async () => (await h.balance(alice.sub)) === 100_000);
    });
  }
});
