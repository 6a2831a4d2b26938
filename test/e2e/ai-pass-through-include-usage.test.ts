import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createTestUpstream, creditTokens, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { describeV1Paths, type V1Path } from './helpers/describeMatrix.js';
import { fee, OUTPUT_TOKENS, settlementOf, usageOf } from './helpers/settlementOf.js';

/**
 * OpenAI Chat's usage chunk (`stream_options.include_usage`), which the fast path asks the upstream
 * for on every stream to meter it (docs/ai.md#pass-through, "What is forwarded"): a caller who did
 * not ask (no `stream_options`, `include_usage: false`, `{}`, `null`) never receives it, whether the
 * stream completes, falls back first, or is cut after it; a caller who asked receives it once, at
 * the end, as OpenAI sends it; either way the call is metered. (The Responses API and Anthropic
 * always carry their usage in their own events: nothing is added there.)
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;

describeV1Paths('ai-pass-through-include-usage', (path: V1Path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: OUTPUT_TOKENS });
    gw = await startAiServer(
      upstream,
      { storage: { type: 'memory' }, ai: { fallbacks: ['openai/gpt-4.1'], retry: { backoffMs: 5, maxBackoffMs: 20 } } },
      { path },
    );
    admin = await tokenFor('pti-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  async function stream(content: string, streamOptions: unknown) {
    const sub = `pti-${path}-${++users}`;
    await creditTokens(gw.url, admin, sub, 100_000, `pti-${sub}`);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await tokenFor(sub), maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user', content }],
        max_tokens: 64,
        stream: true,
        ...(streamOptions === undefined ? {} : { stream_options: streamOptions as OpenAI.ChatCompletionStreamOptions }),
      })
      .withResponse();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    let failed = false;
    try {
      for await (const c of data) chunks.push(c);
    } catch {
      failed = true;
    }
    const withUsage = chunks.filter((c) => c.usage);
    return { sub, chunks, withUsage, failed, passThrough: response.headers.get('x-ai-backend-path') === 'pass-through' };
  }

  describe('a caller who did not ask never receives the usage chunk; one who asked receives it once', () => {
    for (const [name, options] of [
      ['no stream_options', undefined],
      ['include_usage: false', { include_usage: false }],
      ['stream_options: {}', {}],
      ['stream_options: null', null],
    ] as const)
      it(`${name}: no usage chunk, the text whole, metered exactly`, async () => {
        const content = `not asked ${name}`;
        const s = await stream(content, options);
        expect(s.passThrough).toBe(path === 'pass-through');
        if (path === 'pass-through') expect(upstream.requests.at(-1)!.body).toMatchObject({ stream_options: { include_usage: true } });
        expect(s.withUsage).toEqual([]);
        expect(s.chunks.every((c) => c.choices.length > 0)).toBe(true);
        expect(s.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toMatch(/^Test reply from/);
        const settled = await settlementOf(gw, s.sub);
        expect(settled.usage).toMatchObject({ tokensUsed: usageOf(content), tokensCharged: usageOf(content) + fee(usageOf(content)) });
      });

    it('include_usage: true: the usage chunk once, last, with the counts charged', async () => {
      const content = 'asked for usage';
      const s = await stream(content, { include_usage: true });
      expect(s.withUsage).toHaveLength(1);
      expect(s.chunks.at(-1)).toBe(s.withUsage[0]);
      expect(s.withUsage[0]!.choices).toEqual([]);
      expect(s.withUsage[0]!.usage).toMatchObject({
        prompt_tokens: usageOf(content) - OUTPUT_TOKENS,
        completion_tokens: OUTPUT_TOKENS,
        total_tokens: usageOf(content),
      });
      const settled = await settlementOf(gw, s.sub);
      expect(settled.usage).toMatchObject({ tokensUsed: usageOf(content) });
    });

    it('after a fallback (a 429 first): not asked, none; asked, once', async () => {
      for (const asked of [false, true]) {
        upstream.reset();
        upstream.failNext({ kind: 'status', status: 429 });
        const content = `fallback asked ${asked}`;
        const s = await stream(content, asked ? { include_usage: true } : undefined);
        expect(upstream.requests.filter((r) => r.format !== 'models').map((r) => r.model)).toEqual(['gpt-4.1-mini', 'gpt-4.1']);
        expect(s.withUsage).toHaveLength(asked ? 1 : 0);
        const settled = await settlementOf(gw, s.sub);
        expect(settled.usage).toMatchObject({ model: 'gpt-4.1', tokensUsed: usageOf(content) });
      }
    });

    it('a stream cut after its usage chunk, before [DONE]: not asked, the chunk still withheld; asked, it came', async () => {
      for (const asked of [false, true]) {
        const s = await stream(`cut after usage ${asked} [[upstream:truncate=1]]`, asked ? { include_usage: true } : undefined);
        expect(s.failed).toBe(true);
        if (path === 'pass-through') expect(s.withUsage).toHaveLength(asked ? 1 : 0);
        else expect(s.withUsage).toEqual([]);
        const settled = await settlementOf(gw, s.sub);
        expect(settled.closes).toBe(1);
        // Cut after its usage chunk: on the fast path, the usage it reported, below the hold
        // (docs/ai.md#pass-through, "Metering").
        if (path === 'pass-through') {
          expect(settled.charged).toBeGreaterThan(0);
          expect(settled.charged).toBeLessThan(settled.held);
          expect(settled.usage?.tokensUsed).toBeGreaterThan(0);
        }
      }
    });
  });
});
