import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { alice, createAiHarness, rejection, type AiHarness } from '../../routers/ai/__tests__/aiHarness.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { loadAiSdk, loadProviderSdk } from './aiSdk.js';
import { AiService } from './AiService.js';
import type { Hold, Metering } from '../metering/Metering.js';

/**
 * One metered call enters billing twice: once for the hold (who pays, key limits, reservation,
 * the re-decision on a budget refusal) and once to close it (settle, or release on failure).
 * Counted at the AI service's one billing seam (`AiServiceOptions.metering`), with a decorator
 * that delegates every entry to the real BillingService of a real runtime.
 */
function counted(inner: Metering) {
  const n = { hold: 0, settle: 0, release: 0 };
  const metering: Metering = {
    async hold(req) {
      n.hold++;
      const h = await inner.hold(req);
      const closes: Hold = {
        usdLimited: false,
        mode: h.mode,
        apiKey: h.apiKey,
        settle: (usage) => (n.settle++, h.settle(usage)),
        release: (reason) => (n.release++, h.release(reason)),
      };
      return closes;
    },
  };
  return { n, metering };
}

beforeAll(() => Promise.all([loadAiSdk(), loadProviderSdk('openai')]), 60_000);

let h: AiHarness;
afterEach(() => h.close());

async function engine(over: Parameters<typeof createAiHarness>[0] = {}) {
  h = await createAiHarness(over);
  const { n, metering } = counted(h.runtime.billing);
  const ai = new AiService({ config: h.runtime.config, logger: createLogger('error'), metering, storage: new MemoryStorage() });
  const call = { identity: alice, signal: new AbortController().signal, ip: '127.0.0.1' };
  return { n, ai, call };
}

const ask = { content: 'hi', systemPrompt: 's', provider: 'openai' as const, options: { maxTokens: 100 } };

describe('billing entries of one metered call', () => {
  it('generateText, platform-paid: one hold, one settle, and the balance moves by the charge', async () => {
    const { n, ai, call } = await engine();
    await h.credit(alice.sub, 100_000);
    const r = await ai.generateText(ask, call);
    expect(n).toEqual({ hold: 1, settle: 1, release: 0 });
    expect(await h.balance(alice.sub)).toBe(100_000 - r.tokenUsage!.tokensCharged);
  });

  it('streamText: one hold, one settle when the stream ends', async () => {
    const { n, ai, call } = await engine();
    await h.credit(alice.sub, 100_000);
    const events = [];
    for await (const e of await ai.streamText(ask, call)) events.push(e);
    expect(events.at(-1)).toMatchObject({ type: 'finish' });
    expect(n).toEqual({ hold: 1, settle: 1, release: 0 });
  });

  it('embed: one hold, one settle', async () => {
    const { n, ai, call } = await engine();
    await h.credit(alice.sub, 100_000);
    await ai.embed({ model: 'openai/text-embedding-3-small', input: ['a', 'b'] }, call);
    expect(n).toEqual({ hold: 1, settle: 1, release: 0 });
  });

  it('a call with its own key: one hold, one settle (the usage record), nothing charged', async () => {
    const { n, ai, call } = await engine();
    const r = await ai.generateText({ ...ask, apiKey: 'sk-own-key-000000000' }, call);
    expect(r.usageInfo).toBeDefined();
    expect(n).toEqual({ hold: 1, settle: 1, release: 0 });
  });

  it('a budget refusal moved to the stored key: still one hold (the re-decision is inside it), one settle', async () => {
    const { n, ai, call } = await engine();
    await h.credit(alice.sub, 100_000);
    await h.runtime.vault.store(alice.sub, 'openai', 'sk-alice-stored-key-123456');
    await h.runtime.billing.preferences.update(alice.sub, { byokEnabled: true });
    await h.runtime.billing.budgets.set(alice.sub, 'daily', { tokens: 10 }, 'test');
    const r = await ai.generateText(ask, call);
    expect(r.usageInfo).toBeDefined();
    expect(h.upstream.requests.at(-1)?.apiKey).toBe('sk-alice-stored-key-123456');
    expect(n).toEqual({ hold: 1, settle: 1, release: 0 });
    expect(await h.balance(alice.sub)).toBe(100_000);
  });

  it('an upstream failure: one hold, one release, no settle; a fallback that serves: one hold, one settle', async () => {
    const { n, ai, call } = await engine({ ai: { retry: { backoffMs: 1, maxBackoffMs: 2 } } });
    await h.credit(alice.sub, 100_000);
    expect(await rejection(ai.generateText({ ...ask, content: 'hi [[upstream:500]]' }, call))).toMatchObject({ appCode: 'UPSTREAM_ERROR' });
    expect(n).toEqual({ hold: 1, settle: 0, release: 1 });
    expect(await h.balance(alice.sub)).toBe(100_000);
    h.upstream.failNext({ kind: 'status', status: 503 });
    const r = await ai.generateText({ ...ask, fallbacks: ['anthropic'] }, call);
    expect(r.data.provider).toBe('anthropic');
    expect(n).toEqual({ hold: 2, settle: 1, release: 1 });
  });
});
