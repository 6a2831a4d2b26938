// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { rpcCall } from './helpers/aiGateway.js';
import { fee, rejectionOf, sixProviderSuite } from './helpers/sixProviders.js';
import { describeMatrix } from './helpers/describeMatrix.js';

/**
 * POST /v1/embeddings (the `openai` client's embeddings.create, base64 by default) and the
 * ai.embed procedure over JSON-RPC, against the test upstream's embeddings wire formats
 * (OpenAI, OpenRouter, Google, and two named providers: openai-compatible and Mistral's package).
 * Metered by input tokens: balances exact after each.
 */
const MODELS: Record<string, string> = {
  openai: 'openai/text-embedding-3-small',
  google: 'google/gemini-embedding-001',
  openrouter: 'openrouter/openai/text-embedding-3-small',
  local: 'local/bge-small',
  mist: 'mist', // its first embedding model
};

describeMatrix('/v1/embeddings', (mode) => {
  const suite = sixProviderSuite(mode, 'em-user');
  const { balanceOf } = suite;
  async function funded(tokens: number) {
    const token = await suite.fundedToken(tokens);
    return { token, client: new OpenAI({ baseURL: suite.gw.url + '/v1', apiKey: token, maxRetries: 0 }) };
  }
  const texts = ['the quick brown fox', 'jumps over the lazy dog, twice'];

  describe('embeddings', () => {
    for (const provider of Object.keys(MODELS)) {
      it(`${provider}: embeddings.create (base64 decoded by the client), charged by input tokens`, async () => {
        const u = await funded(10_000);
        const r = await u.client.embeddings.create({ model: MODELS[provider]!, input: texts });
        expect(r.data).toHaveLength(2);
        expect(r.data[0]!.embedding).toHaveLength(8);
        expect(Math.hypot(...r.data[0]!.embedding)).toBeCloseTo(1, 4);
        expect(r.data[0]!.embedding).not.toEqual(r.data[1]!.embedding);
        const rec = suite.upstream.requests.at(-1)!;
        expect(rec.provider).toBe(provider);
        const used =
          provider === 'google'
            ? texts.reduce((n, t) => n + Buffer.byteLength(t) + 1, 0)
            : texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
        // Google's embeddings report no usage: charged the reserved bound (UTF-8 bytes + 1 per input).
        expect(r.usage.prompt_tokens).toBe(used);
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
      });
    }

    it('dimensions and float encoding pass through; the same text gives the same vector', async () => {
      const u = await funded(10_000);
      const a = await u.client.embeddings.create({ model: MODELS.openai!, input: 'same', dimensions: 16, encoding_format: 'float' });
      const b = await u.client.embeddings.create({ model: MODELS.local!, input: 'same', dimensions: 16 });
      expect(a.data[0]!.embedding).toHaveLength(16);
      expect(b.data[0]!.embedding.map((x) => Math.round(x * 1e4))).toEqual(a.data[0]!.embedding.map((x) => Math.round(x * 1e4)));
    });

    it('ai.embed over JSON-RPC: platform-paid and BYOK (cost from the registry price)', async () => {
      const u = await funded(10_000);
      const r = await rpcCall<{ data: { provider: string; model: string; embeddings: number[][] }; tokenUsage: { tokensCharged: number } }>(
        suite.gw.url,
        u.token,
        'ai.embed',
        { model: 'mist/mistral-embed', input: 'hello embeddings' },
      );
      expect(r.result!.data).toMatchObject({ provider: 'mist', model: 'mistral-embed' });
      expect(await balanceOf(u.token)).toBe(10_000 - r.result!.tokenUsage.tokensCharged);
      const byok = await rpcCall<{ usageInfo: { tokensUsed: number; estimatedCostUsd: number } }>(suite.gw.url, u.token, 'ai.embed', {
        model: 'mist',
        input: 'x'.repeat(400),
        apiKey: 'caller-key',
      });
      expect(byok.result!.usageInfo).toEqual({ tokensUsed: 100, estimatedCostUsd: (100 * 0.1) / 1e6 });
      expect(suite.upstream.requests.at(-1)!.apiKey).toBe('caller-key');
      expect(await balanceOf(u.token)).toBe(10_000 - r.result!.tokenUsage.tokensCharged);
    });

    it("a bare embedding model name (as OpenAI's docs write it) resolves to the one provider serving it; a bare provider to its first embedding model", async () => {
      const u = await funded(10_000);
      const bare = await u.client.embeddings.create({ model: 'text-embedding-3-small', input: 'a bare name' });
      expect(bare.data).toHaveLength(1);
      expect(suite.upstream.requests.at(-1)).toMatchObject({ provider: 'openai' });
      for (const [ref, model] of [
        ['openai', 'text-embedding-3-small'],
        ['google', 'gemini-embedding-001'],
      ] as const) {
        const r = await rpcCall<{ data: { provider: string; model: string } }>(suite.gw.url, u.token, 'ai.embed', {
          model: ref,
          input: 'x',
        });
        expect(r.result?.data, JSON.stringify(r.error)).toMatchObject({ provider: ref, model });
      }
      // Priced by the registry: a BYOK call's cost is its tokens at the model's price.
      const byok = await rpcCall<{ usageInfo: { tokensUsed: number; estimatedCostUsd: number } }>(suite.gw.url, u.token, 'ai.embed', {
        model: 'text-embedding-3-large',
        input: 'x'.repeat(400),
        apiKey: 'caller-key',
      });
      expect(byok.result?.usageInfo, JSON.stringify(byok.error)).toEqual({ tokensUsed: 100, estimatedCostUsd: (100 * 0.13) / 1e6 });
    });

    it('errors are OpenAI-shaped: a chat model, a provider without embeddings, upstream 429, no credit; failures refund', async () => {
      const u = await funded(10_000);
      const err = (p: Promise<unknown>) => rejectionOf<InstanceType<typeof OpenAI.APIError>>(p);
      expect((await err(u.client.embeddings.create({ model: 'mist/mistral-small-latest', input: 'x' }))).status).toBe(400);
      expect((await err(u.client.embeddings.create({ model: 'anthropic/claude-sonnet-4-5', input: 'x' }))).status).toBe(400);
      const limited = await err(u.client.embeddings.create({ model: MODELS.local!, input: 'x [[upstream:429:retry=2]]' }));
      expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
      expect(limited.headers?.get('retry-after')).toBe('2');
      const down = await err(u.client.embeddings.create({ model: MODELS.openai!, input: 'x [[upstream:500]]' }));
      expect(down.status).toBe(502);
      expect(await balanceOf(u.token)).toBe(10_000);
      const poor = await funded(1);
      expect((await err(poor.client.embeddings.create({ model: MODELS.openai!, input: 'x'.repeat(100) }))).status).toBe(402);
    });
  });
});
