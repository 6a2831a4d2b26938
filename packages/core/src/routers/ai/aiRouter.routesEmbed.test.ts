import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, type TestUpstream } from '@ai-backend/test-utils';
import type { Identity } from '../../kernel/identity.js';
import { alice, createAiHarness, keyWith, SERVER_KEY, type AiHarness } from './__tests__/aiHarness.js';

/**
 * Routes served by ai.embed: deployments of one embedding model, each a named provider with a
 * test upstream of its own, so every deployment's calls are counted where they arrive.
 */
const EMBED = 'deploy-embed';

let upstreams: TestUpstream[] = [];
let h: AiHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await Promise.all(upstreams.map((u) => u.close()));
  upstreams = [];
});

async function harness(ids: string[], routes: Record<string, unknown>): Promise<{ ups: Record<string, TestUpstream>; h: AiHarness }> {
  const ups: Record<string, TestUpstream> = {};
  const providers: Record<string, unknown> = {};
  for (const id of ids) {
    const up = await createTestUpstream();
    upstreams.push(up);
    ups[id] = up;
    providers[id] = {
      type: 'openai-compatible',
      baseUrl: up.namedBaseUrl(id),
      apiKey: SERVER_KEY,
      models: { [EMBED]: { kind: 'embedding', inputUsdPerMTok: 1 }, chat: { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } },
    };
  }
  h = await createAiHarness({
    serverProviders: ['anthropic', 'openai', 'google', 'openrouter', ...ids],
    ai: {
      providers: providers as never,
      routes: routes as never,
      retry: { backoffMs: 1, maxBackoffMs: 2 },
      circuitBreaker: { failureThreshold: 1000 },
    },
  });
  await h.credit(alice.sub, 100_000_000);
  return { ups, h };
}

const embeds = (up: TestUpstream) => up.requests.filter((r) => r.format === 'embeddings').length;
const embed = (who: Identity, model: string) => h!.caller(who).ai.embed({ model, input: ['one text', 'another text'] });

describe('routes served by ai.embed', () => {
  it('weighted 3:1 splits 80 embedding calls by the weights, each answered by the deployment that served it', async () => {
    const { ups } = await harness(['dep-a', 'dep-b'], {
      vectors: {
        targets: [
          { model: `dep-a/${EMBED}`, weight: 3 },
          { model: `dep-b/${EMBED}`, weight: 1 },
        ],
      },
    });
    const served: Record<string, number> = {};
    for (let i = 0; i < 80; i++) {
      const r = await embed(alice, 'vectors');
      expect(r.data.embeddings).toHaveLength(2);
      expect(r.data.model).toBe(EMBED);
      served[r.data.provider] = (served[r.data.provider] ?? 0) + 1;
    }
    expect(embeds(ups['dep-a']!)).toBe(served['dep-a']);
    expect(embeds(ups['dep-b']!)).toBe(served['dep-b']);
    expect(served['dep-a']! + served['dep-b']!).toBe(80);
    expect(served['dep-a']! / 80).toBeGreaterThan(0.55);
    expect(served['dep-a']! / 80).toBeLessThan(0.95);
  });

  it('a deployment answering 429 is cooled down: the call is retried on the other target, charged once for it, the next calls skip it', async () => {
    const { ups } = await harness(['dep-a', 'dep-b'], {
      vectors: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${EMBED}`, priority: 0 },
          { model: `dep-b/${EMBED}`, priority: 1 },
        ],
      },
    });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 30 });
    const before = await h!.balance(alice.sub);
    const first = await embed(alice, 'vectors');
    expect(first.data.provider).toBe('dep-b');
    expect(await h!.balance(alice.sub)).toBe(before - first.tokenUsage!.tokensCharged);
    const settles = (await h!.runtime.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(1);
    expect(settles[0]!.usage).toMatchObject({ provider: 'dep-b' });
    for (let i = 0; i < 5; i++) expect((await embed(alice, 'vectors')).data.provider).toBe('dep-b');
    expect(embeds(ups['dep-a']!)).toBe(1);
    expect(embeds(ups['dep-b']!)).toBe(6);
    const report = await h!.runtime.ai.routes();
    expect(report[0]!.targets[0]).toMatchObject({ errors: 1 });
    expect(report[0]!.targets[0]!.coolingDownUntil).not.toBeNull();
    expect(report[0]!.targets[1]).toMatchObject({ calls: 6, errors: 0 });
  });

  it('every target failing: the error names each attempt; retries stop after `retries` other targets', async () => {
    const { ups } = await harness(['dep-a', 'dep-b', 'dep-c'], {
      r1: {
        strategy: 'priority',
        retries: 1,
        targets: [
          { model: `dep-a/${EMBED}`, priority: 0 },
          { model: `dep-b/${EMBED}`, priority: 1 },
          { model: `dep-c/${EMBED}`, priority: 2 },
        ],
      },
    });
    for (const id of ['dep-a', 'dep-b']) ups[id]!.failProvider(id, { kind: 'status', status: 503 });
    const before = await h!.balance(alice.sub);
    const err = (await embed(alice, 'r1').then(
      () => undefined,
      (e: unknown) => e,
    )) as { cause?: { details?: { attempts?: unknown[] } } };
    expect(err.cause?.details?.attempts).toHaveLength(2);
    expect(embeds(ups['dep-c']!)).toBe(0);
    expect(await h!.balance(alice.sub)).toBe(before);
  });

  it("an API key's model rules apply over the targets; a route with a chat model is refused", async () => {
    await harness(['dep-a', 'dep-b'], {
      vectors: { targets: [{ model: `dep-a/${EMBED}` }, { model: `dep-b/${EMBED}` }] },
      mixed: { targets: [{ model: `dep-a/${EMBED}` }, { model: 'dep-b/chat' }] },
    });
    const onlyB = await keyWith(h!, alice, [`dep-b/${EMBED}`]);
    for (let i = 0; i < 6; i++) expect((await embed(onlyB, 'vectors')).data.provider).toBe('dep-b');
    const byRoute = await keyWith(h!, alice, ['vectors']);
    expect((await embed(byRoute, 'vectors')).data.model).toBe(EMBED);
    const other = await keyWith(h!, alice, ['openai/gpt-4.1-nano']);
    await expect(embed(other, 'vectors')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(embed(alice, 'mixed')).rejects.toMatchObject({ cause: { details: { reason: 'not_an_embedding_model' } } });
  });
});
