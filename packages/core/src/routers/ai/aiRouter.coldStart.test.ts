import { afterAll, expect, it, vi } from 'vitest';
import { alice, createAiHarness, type AiHarness } from './__tests__/aiHarness.js';

// A cold server loads the AI SDK (`ai` and the four providers) on its first call; on a busy or
// slow machine that takes seconds. Here the load is made to take 3 s (the real module, delivered
// late), so the assertion does not depend on this machine's speed: ai.timeoutMs (2 s) is the time
// the upstream gets to answer and must not include module loading.
const LOAD_MS = 3000;
vi.mock('ai', async (importOriginal) => {
  await new Promise((r) => setTimeout(r, LOAD_MS)); // stands in for a slow cold import
  return importOriginal();
});

let h: AiHarness | undefined;
afterAll(async () => h?.close());

it('a cold server answers its first call although loading the AI SDK takes longer than ai.timeoutMs', async () => {
  h = await createAiHarness({ ai: { timeoutMs: 2000 } });
  await h.credit(alice.sub, 10_000);
  const started = performance.now();
  const out = await h
    .caller(alice)
    .ai.generateText({ content: 'hello', systemPrompt: 'support', provider: 'anthropic', options: { maxTokens: 10 } });
  expect(performance.now() - started).toBeGreaterThanOrEqual(LOAD_MS - 50); // the first call did pay for the load
  expect(out.data.text.length).toBeGreaterThan(0);
  expect(h.upstream.requests).toHaveLength(1);
  expect(h.upstream.requests[0]!.aborted).toBe(false);
});
