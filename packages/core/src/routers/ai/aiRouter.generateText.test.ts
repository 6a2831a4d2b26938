import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_IDS, type BuiltinProviderId as ProviderId } from '../../config/sections/ai.js';
import { estimateTokens } from '../../services/ai/runGenerateText.js';
import {
  alice,
  bob,
  createAiHarness,
  rejection,
  SERVER_KEY,
  SYSTEM_PROMPT,
  USER_KEY,
  visibleError,
  type AiHarness,
} from './__tests__/aiHarness.js';

let h: AiHarness;
afterEach(() => h?.close());

const fee = (n: number) => Math.ceil(n * 0.1);
const ALIASES: Record<ProviderId, string> = {
  anthropic: 'provider_a',
  openai: 'provider_b',
  google: 'provider_c',
  openrouter: 'provider_d',
};
const PATHS: Record<ProviderId, string> = {
  anthropic: '/v1/messages',
  openai: '/v1/responses',
  google: ':generateContent',
  openrouter: '/api/v1/chat/completions',
};

describe('ai.generateText, platform-paid', () => {
  for (const provider of PROVIDER_IDS) {
    it(`${provider}: server key, system prompt upstream, tokens charged with fee, metadata recorded`, async () => {
      h = await createAiHarness();
      await h.credit(alice.sub, 10_000);
      const content = 'Hello there, how are you?';
      const r = await h
        .caller(alice)
        .ai.generateText({ content, systemPrompt: SYSTEM_PROMPT, provider, metadata: { name: 'greet', type: 'chat' } });

      const rec = h.upstream.requests.at(-1)!;
      expect(rec.path.endsWith(PATHS[provider])).toBe(true);
      expect(rec.apiKey).toBe(SERVER_KEY);
      expect(rec.system).toBe(SYSTEM_PROMPT);
      expect(rec.content).toBe(content);
      expect(rec.model).toBe(h.runtime.ai.providers.defaultModel(provider));

      const used = Math.ceil((content.length + SYSTEM_PROMPT.length) / 4) + 16;
      expect(r.success).toBe(true);
      expect(r.data.text).toMatch(/^Test reply from /);
      expect(r.data.provider).toBe(provider);
      expect(r.tokenUsage).toEqual({
        tokensUsed: used,
        tokensCharged: used + fee(used),
        platformFee: fee(used),
        remainingBalance: 10_000 - used - fee(used),
      });
      expect(r.usageInfo).toBeUndefined();
      expect(await h.balance(alice.sub)).toBe(10_000 - used - fee(used));
      expect(JSON.stringify(r)).not.toContain(SYSTEM_PROMPT);

      const entries = await h.runtime.billing.ledger.entries(alice.sub);
      const settle = entries.find((e) => e.kind === 'settle');
      expect(settle?.usage).toMatchObject({ provider, model: r.data.model, tokensUsed: used, metadata: { name: 'greet', type: 'chat' } });
      expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
    });
  }

  it('accepts the neutral aliases provider_a..provider_d', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 20_000);
    for (const provider of PROVIDER_IDS) {
      const r = await h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '', provider: ALIASES[provider] as ProviderId });
      expect(r.data.provider).toBe(provider);
    }
    expect(h.upstream.requests.map((q) => q.provider)).toEqual(['anthropic', 'openai', 'google', 'openrouter']);
  });

  it('uses the default provider, and options.model / maxTokens / temperature reach the upstream', async () => {
    h = await createAiHarness({ ai: { defaultProvider: 'google' } });
    await h.credit(alice.sub, 10_000);
    const r = await h
      .caller(alice)
      .ai.generateText({ content: 'x', systemPrompt: 's', options: { model: 'gemini-2.5-pro', maxTokens: 5, temperature: 0.3 } });
    const rec = h.upstream.requests.at(-1)!;
    expect(rec.provider).toBe('google');
    expect(rec.model).toBe('gemini-2.5-pro');
    expect(rec.maxTokens).toBe(5);
    expect((rec.body as { generationConfig: { temperature: number } }).generationConfig.temperature).toBe(0.3);
    expect(r.data.usage.outputTokens).toBe(5);
    expect(r.data.finishReason).toBe('length');
  });

  it('openai api "chat" uses chat completions', async () => {
    h = await createAiHarness({ ai: { providers: { openai: { api: 'chat' } } } });
    await h.credit(alice.sub, 10_000);
    await h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai' });
    expect(h.upstream.requests.at(-1)!.path).toBe('/v1/chat/completions');
  });

  it('a user without tokens gets PAYMENT_REQUIRED before any upstream call', async () => {
    h = await createAiHarness();
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's' }));
    expect(err.appCode ?? (err as { code?: string }).code).toBe('PAYMENT_REQUIRED');
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('tokens that do not cover the worst case (estimate + maxTokens + fee) are refused', async () => {
    h = await createAiHarness();
    const worst = estimateTokens('x', 's', 1024);
    await h.credit(alice.sub, worst + fee(worst) - 1);
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's' }));
    expect((err as { code?: string }).code).toBe('PAYMENT_REQUIRED');
    expect(h.upstream.requests).toHaveLength(0);
    await h.credit(alice.sub, 1);
    await expect(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's' })).resolves.toMatchObject({ success: true });
  });

  it('anonymous callers without a key get PAYMENT_REQUIRED; server-paid anonymous only when enabled', async () => {
    h = await createAiHarness();
    const err = await rejection(h.caller(null).ai.generateText({ content: 'x', systemPrompt: 's' }));
    expect((err as { code?: string }).code).toBe('PAYMENT_REQUIRED');
    expect(h.upstream.requests).toHaveLength(0);
    await h.close();

    h = await createAiHarness({ billing: { allowAnonymousServerPaid: true } });
    const r = await h.caller(null).ai.generateText({ content: 'x', systemPrompt: 's' });
    expect(r.tokenUsage?.tokensUsed).toBeGreaterThan(0);
    expect(r.tokenUsage?.remainingBalance).toBeNull();
    expect(h.upstream.requests.at(-1)!.apiKey).toBe(SERVER_KEY);
  });

  it('a provider the server does not pay for asks for an apiKey', async () => {
    h = await createAiHarness({ serverProviders: ['anthropic'] });
    await h.credit(alice.sub, 10_000);
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai' }));
    expect(err.details).toMatchObject({ reason: 'provider_not_served', provider: 'openai' });
    expect(h.upstream.requests).toHaveLength(0);
    expect(await h.balance(alice.sub)).toBe(10_000);
  });
});

describe('ai.generateText, BYOK', () => {
  it('an apiKey in the input is used, nothing is charged, usageInfo has the registry cost', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const r = await h.caller(alice).ai.generateText({
      content: 'hello',
      systemPrompt: SYSTEM_PROMPT,
      provider: 'openai',
      apiKey: USER_KEY,
      options: { model: 'gpt-4o' },
    });
    expect(h.upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
    const input = Math.ceil(('hello'.length + SYSTEM_PROMPT.length) / 4);
    expect(r.tokenUsage).toBeUndefined();
    expect(r.usageInfo).toEqual({ tokensUsed: input + 16, estimatedCostUsd: (input * 2.5 + 16 * 10) / 1e6 });
    expect(await h.balance(alice.sub)).toBe(10_000);
    expect(JSON.stringify(r)).not.toContain(USER_KEY);
    const usage = (await h.runtime.billing.ledger.entries(alice.sub)).find((e) => e.kind === 'byok_usage');
    expect(usage?.usage).toMatchObject({ provider: 'openai', model: 'gpt-4o', tokensUsed: input + 16, tokensCharged: 0 });
  });

  it('anonymous callers may use their own key', async () => {
    h = await createAiHarness();
    const r = await h.caller(null).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'anthropic', apiKey: USER_KEY });
    expect(r.usageInfo?.tokensUsed).toBeGreaterThan(0);
    expect(h.upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
  });

  it("a user's stored key is used when BYOK is enabled and tokens run out", async () => {
    h = await createAiHarness();
    await h.runtime.vault.store(bob.sub, 'google', USER_KEY);
    await h.runtime.billing.preferences.update(bob.sub, { byokEnabled: true });
    const r = await h.caller(bob).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'google' });
    expect(h.upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
    expect(r.usageInfo).toBeDefined();
    expect(r.tokenUsage).toBeUndefined();
  });

  it('a model without pricing reports estimatedCostUsd 0', async () => {
    h = await createAiHarness();
    const r = await h
      .caller(null)
      .ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai', apiKey: USER_KEY, options: { model: 'my-local-model' } });
    expect(r.usageInfo?.estimatedCostUsd).toBe(0);
  });

  it('config ai.models overrides the bundled pricing', async () => {
    h = await createAiHarness({ ai: { models: { openai: { 'gpt-4o': { inputUsdPerMTok: 1000, outputUsdPerMTok: 0 } } } } });
    const r = await h
      .caller(null)
      .ai.generateText({ content: 'abcd', systemPrompt: '', provider: 'openai', apiKey: USER_KEY, options: { model: 'gpt-4o' } });
    expect(r.usageInfo?.estimatedCostUsd).toBe(0.001); // 1 input token at $1000 per million
  });

  it('byokProviders excludes a provider from own keys', async () => {
    h = await createAiHarness({ ai: { byokProviders: ['anthropic'] } });
    const err = await rejection(h.caller(null).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai', apiKey: USER_KEY }));
    expect((err as { code?: string }).code).toBe('FORBIDDEN');
    expect(err.details).toMatchObject({ reason: 'byok_not_allowed' });
    expect(h.upstream.requests).toHaveLength(0);
  });
});

describe('ai.generateText, protected system prompts', () => {
  it('"@name" sends the server prompt upstream; the text appears in no response or log', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const r = await h.caller(alice).ai.generateText({ content: 'help me', systemPrompt: '@support', provider: 'anthropic' });
    expect(h.upstream.requests.at(-1)!.system).toBe(SYSTEM_PROMPT);
    expect(JSON.stringify(r)).not.toContain('TOP-SECRET');
    expect(h.logs.join('\n')).not.toContain('TOP-SECRET');
    expect(h.logs.join('\n')).not.toContain(SERVER_KEY);
  });

  it('prompts registered from code work like config ones', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    h.runtime.ai.systemPrompts.register('coder', 'CODE-PROMPT-TEXT');
    await h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '@coder' });
    expect(h.upstream.requests.at(-1)!.system).toBe('CODE-PROMPT-TEXT');
  });

  it('an unknown "@name" is NOT_FOUND and names only the reference', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '@nope' }));
    expect((err as { code?: string }).code).toBe('NOT_FOUND');
    expect(err.message).toBe('unknown system prompt "@nope"');
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('allowInlineSystemPrompts false refuses inline text but accepts references', async () => {
    h = await createAiHarness({ ai: { allowInlineSystemPrompts: false } });
    await h.credit(alice.sub, 10_000);
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 'be nice' }));
    expect(err.details).toMatchObject({ reason: 'inline_system_prompt_disabled' });
    expect(visibleError(err)).not.toContain('be nice');
    await expect(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '@support' })).resolves.toMatchObject({ success: true });
  });
});

describe('ai.generateText, input limits and model restrictions', () => {
  it('refuses blocked and not-allowed models before any upstream call', async () => {
    h = await createAiHarness({ ai: { providers: { openai: { allowedModels: ['gpt-4*', 'gpt-5-mini'], blockedModels: ['gpt-4o'] } } } });
    await h.credit(alice.sub, 10_000);
    for (const model of ['gpt-4o', 'o3']) {
      const err = await rejection(
        h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai', options: { model } }),
      );
      expect((err as { code?: string }).code).toBe('FORBIDDEN');
      expect(err.details).toMatchObject({ reason: 'model_not_allowed' });
    }
    expect(h.upstream.requests).toHaveLength(0);
    await expect(
      h.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai', options: { model: 'gpt-4.1' } }),
    ).resolves.toMatchObject({ success: true });
  });

  it('maxTokens above the limit or the model maximum, and oversized content, are refused', async () => {
    h = await createAiHarness({ ai: { maxTokensLimit: 100_000, maxContentChars: 50 } });
    await h.credit(alice.sub, 1_000_000);
    const c = h.caller(alice).ai;
    expect((await rejection(c.generateText({ content: 'x', systemPrompt: 's', options: { maxTokens: 100_001 } }))).message).toMatch(
      /at most 100000/,
    );
    expect(
      (
        await rejection(
          c.generateText({ content: 'x', systemPrompt: 's', provider: 'openai', options: { model: 'gpt-4o', maxTokens: 20_000 } }),
        )
      ).message,
    ).toMatch(/at most 16384 for gpt-4o/);
    expect(((await rejection(c.generateText({ content: 'y'.repeat(51), systemPrompt: 's' }))) as { code?: string }).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    expect(((await rejection(c.generateText({ content: '', systemPrompt: 's' }))) as { code?: string }).code).toBe('BAD_REQUEST');
    expect(
      ((await rejection(c.generateText({ content: 'x', systemPrompt: 's', provider: 'provider_e' as ProviderId }))) as { code?: string })
        .code,
    ).toBe('BAD_REQUEST');
    expect(h.upstream.requests).toHaveLength(0);
  });
});
