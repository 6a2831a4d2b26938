import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { PROVIDER_IDS, type ProviderId } from '../../config/sections/ai.js';
import type { StreamEvent } from '../../services/ai/runStreamText.js';
import { alice, createAiHarness, rejection, SERVER_KEY, SYSTEM_PROMPT, USER_KEY, type AiHarness } from './__tests__/aiHarness.js';
import { estimateTokens } from '../../services/ai/index.js';

let h: AiHarness;
afterEach(() => h?.close());

const fee = (n: number) => Math.ceil(n * 0.1);
/** Both OpenAI APIs plus the other three providers. */
const TARGETS: Array<{ provider: ProviderId; api?: 'chat'; path: string }> = [
  { provider: 'anthropic', path: '/v1/messages' },
  { provider: 'openai', path: '/v1/responses' },
  { provider: 'openai', api: 'chat', path: '/v1/chat/completions' },
  { provider: 'google', path: ':streamGenerateContent' },
  { provider: 'openrouter', path: '/api/v1/chat/completions' },
];
const label = (t: (typeof TARGETS)[number]) => (t.api ? `${t.provider} (${t.api})` : t.provider);
const harnessFor = (t: (typeof TARGETS)[number], upstream: Parameters<typeof createAiHarness>[1] = {}) =>
  createAiHarness(t.api ? { ai: { providers: { openai: { api: t.api } } } } : {}, upstream);

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

describe('ai.streamText', () => {
  for (const t of TARGETS) {
    it(`${label(t)}: streams text deltas in the provider's wire format and settles the reported usage once`, async () => {
      h = await harnessFor(t);
      await h.credit(alice.sub, 10_000);
      const content = 'Tell me a story please';
      const events = await collect(await h.caller(alice).ai.streamText({ content, systemPrompt: SYSTEM_PROMPT, provider: t.provider }));

      const rec = h.upstream.requests.at(-1)!;
      expect(rec.path.endsWith(t.path)).toBe(true);
      expect(rec.extras?.stream).toBe(true);
      expect(rec.apiKey).toBe(SERVER_KEY);
      expect(rec.system).toBe(SYSTEM_PROMPT);

      expect(events[0]).toMatchObject({ type: 'start', provider: t.provider });
      const deltas = events.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta);
      expect(deltas.length).toBeGreaterThan(1);
      const finish = events.at(-1)!;
      if (finish.type !== 'finish') throw new Error('no finish event');
      expect(deltas.join('')).toBe(finish.result.data.text);
      expect(finish.result.data.text).toMatch(/^Test reply from /);

      const used = Math.ceil((content.length + SYSTEM_PROMPT.length) / 4) + 16;
      expect(finish.result.data.usage).toEqual({ inputTokens: used - 16, outputTokens: 16, totalTokens: used });
      expect(finish.result.tokenUsage).toMatchObject({ tokensUsed: used, tokensCharged: used + fee(used) });
      expect(await h.balance(alice.sub)).toBe(10_000 - used - fee(used));
      const entries = await h.runtime.billing.ledger.entries(alice.sub);
      expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(1);
      expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
      expect(JSON.stringify(events)).not.toContain(SYSTEM_PROMPT);
    });
  }

  it('refuses before streaming: no balance is PAYMENT_REQUIRED, nothing reaches the upstream', async () => {
    h = await createAiHarness();
    const err = await rejection(h.caller(alice).ai.streamText({ content: 'hi', systemPrompt: 's' }));
    expect(err.appCode).toBe('PAYMENT_REQUIRED');
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('BYOK: the caller key goes upstream and nothing is charged', async () => {
    h = await createAiHarness();
    const events = await collect(
      await h.caller(alice).ai.streamText({ content: 'hi', systemPrompt: 's', provider: 'openai', apiKey: USER_KEY }),
    );
    expect(h.upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
    const finish = events.at(-1)!;
    expect(finish.type === 'finish' && finish.result.usageInfo?.tokensUsed).toBeGreaterThan(0);
  });

  for (const provider of PROVIDER_IDS) {
    it(`${provider}: a consumer that stops mid-stream is charged input + UTF-8 bytes produced, the rest released`, async () => {
      h = await createAiHarness({}, { chunkDelayMs: 30, reply: () => 'one two three four five six seven eight nine ten' });
      await h.credit(alice.sub, 10_000);
      const content = 'Count for me';
      const stream = await h.caller(alice).ai.streamText({ content, systemPrompt: '', provider, options: { maxTokens: 100 } });
      let text = '';
      for await (const e of stream) {
        if (e.type === 'text') text += e.delta;
        if (text.split(' ').length > 3) break; // return() on the generator
      }
      // Cut short: our upper bound of the input (UTF-8 bytes plus overhead) plus the bytes streamed.
      const input = estimateTokens(content, '', 0);
      const charged = input + Buffer.byteLength(text);
      // The upstream may have delivered a little more than the consumer read before it stopped.
      const entries = await h.runtime.billing.ledger.entries(alice.sub);
      const settles = entries.filter((e) => e.kind === 'settle');
      expect(settles).toHaveLength(1);
      const used = settles[0]!.usage!.tokensUsed;
      expect(used).toBeGreaterThanOrEqual(charged);
      expect(used).toBeLessThan(input + 100);
      expect(await h.balance(alice.sub)).toBe(10_000 - used - fee(used));
      expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
      // The upstream sees its connection closed a moment after the generator returned.
      await waitFor(() => h.upstream.requests.at(-1)!.aborted, { what: 'the upstream request aborted' });
    });
  }

  it('an upstream that fails before any output releases the whole hold; a stream cut mid-reply charges what arrived', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const err = await rejection(
      collect(await h.caller(alice).ai.streamText({ content: 'x [[upstream:500]]', systemPrompt: '', provider: 'anthropic' })),
    );
    expect(err.appCode).toBe('UPSTREAM_ERROR');
    expect(await h.balance(alice.sub)).toBe(10_000);

    const cut = await rejection(
      collect(
        await h
          .caller(alice)
          .ai.streamText({ content: 'x [[upstream:drop]]', systemPrompt: '', provider: 'openai', options: { maxTokens: 50 } }),
      ),
    );
    expect(cut.appCode).toBe('UPSTREAM_ERROR');
    const settles = (await h.runtime.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(1);
    expect(settles[0]!.usage!.tokensUsed).toBeLessThanOrEqual(estimateTokens('x [[upstream:drop]]', '', 50));
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it('a stalled upstream ends with UPSTREAM_TIMEOUT (idle timeout) and is charged only what arrived', async () => {
    h = await createAiHarness({ ai: { timeoutMs: 300 } });
    await h.credit(alice.sub, 10_000);
    const err = await rejection(
      collect(await h.caller(alice).ai.streamText({ content: 'x [[upstream:stall]]', systemPrompt: '', provider: 'google' })),
    );
    expect(err.appCode).toBe('UPSTREAM_TIMEOUT');
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});
