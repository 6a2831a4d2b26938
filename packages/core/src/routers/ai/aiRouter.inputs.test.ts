import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_IDS } from '../../config/sections/ai.js';
import { canonicalModelId, pinnedFetch } from '../../services/ai/modelId.js';
import { alice, createAiHarness, rejection, SYSTEM_PROMPT, USER_KEY, type AiHarness } from './__tests__/aiHarness.js';

let h: AiHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const BAD_IDS = [
  '../../../../internal/admin/export?',
  'gemini-2.5-pro/../../x',
  'gemini?key=1',
  'gemini#frag',
  '%2e%2e%2fadmin',
  'a b',
  '.hidden',
  '-flag',
  '',
  'x'.repeat(201),
  'models/../x',
];

describe('model ids: strict syntax before any request', () => {
  it('refuses path, query and encoding tricks for every provider, without an upstream request', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 100_000);
    for (const provider of PROVIDER_IDS) {
      for (const model of BAD_IDS) {
        const err = await rejection(h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: 's', provider, options: { model } }));
        expect((err as { code?: string }).code, `${provider} ${JSON.stringify(model)}`).toBe('BAD_REQUEST');
        // With the caller's own key too: the key must not travel to a crafted URL either.
        const own = await rejection(
          h.caller(null).ai.generateText({ content: 'hi', systemPrompt: 's', provider, apiKey: USER_KEY, options: { model } }),
        );
        expect((own as { code?: string }).code).toBe('BAD_REQUEST');
      }
    }
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('accepts the ids providers really use; OpenRouter keeps its vendor/ prefix, Google loses models/', () => {
    expect(canonicalModelId('openai', 'ft:gpt-4o-mini:acme::9abc')).toBe('ft:gpt-4o-mini:acme::9abc');
    expect(canonicalModelId('anthropic', 'claude-sonnet-4-5-20250929')).toBe('claude-sonnet-4-5-20250929');
    expect(canonicalModelId('google', 'models/gemini-2.5-pro')).toBe('gemini-2.5-pro');
    expect(canonicalModelId('openrouter', 'meta-llama/llama-3.1-8b-instruct:free')).toBe('meta-llama/llama-3.1-8b-instruct:free');
    expect(() => canonicalModelId('openrouter', 'a/b/c')).toThrow(/invalid model id/);
    expect(() => canonicalModelId('google', 'tunedModels/x')).toThrow(/invalid model id/);
  });

  it('allow and block lists compare canonical ids: no spelling of a blocked model passes', async () => {
    h = await createAiHarness({
      ai: { providers: { google: { blockedModels: ['gemini-2.5-pro'] }, openai: { allowedModels: ['gpt-4o-mini'] } } },
    });
    await h.credit(alice.sub, 100_000);
    const codeOf = async (provider: 'google' | 'openai', model: string) =>
      (
        (await rejection(h!.caller(alice).ai.generateText({ content: 'hi', systemPrompt: 's', provider, options: { model } }))) as {
          code?: string;
        }
      ).code;
    expect(await codeOf('google', 'x/../models/gemini-2.5-pro')).toBe('BAD_REQUEST');
    expect(await codeOf('google', 'models/gemini-2.5-pro')).toBe('FORBIDDEN');
    expect(await codeOf('google', 'Gemini-2.5-PRO')).toBe('FORBIDDEN');
    expect(await codeOf('openai', 'gpt-4o-mini/../gpt-4o')).toBe('BAD_REQUEST');
    expect(h.upstream.requests).toHaveLength(0);
    const ok = await h
      .caller(alice)
      .ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'google', options: { model: 'models/gemini-2.5-flash' } });
    expect(ok.data.model).toBe('gemini-2.5-flash');
    expect(h.upstream.requests.at(-1)!.path).toMatch(/\/models\/gemini-2\.5-flash:generateContent$/);
  });

  it('the pinned fetch never leaves the configured base: origin, path prefix and query are fixed', async () => {
    const seen: string[] = [];
    const inner = (async (input: string | URL | Request) => {
      seen.push(String(input));
      return new Response('{}');
    }) as typeof fetch;
    const f = pinnedFetch('https://llm.example/v1beta', inner);
    await expect(f('https://llm.example/v1beta/models/x:generateContent')).resolves.toBeInstanceOf(Response);
    await expect(f('https://llm.example/v1beta/models/x:streamGenerateContent?alt=sse')).resolves.toBeInstanceOf(Response);
    for (const bad of [
      'https://evil.example/v1beta/models/x',
      'https://llm.example/internal/admin',
      'https://llm.example/v1beta/../admin',
      'https://llm.example/v1beta/models/x?key=1',
      'https://llm.example/v1beta/models/%2e%2e%2fx',
      'https://llm.example/v1betax/y',
    ]) {
      await expect(f(bad), bad).rejects.toMatchObject({ appCode: 'INVALID_PARAMS' });
    }
    expect(seen).toHaveLength(2);
  });
});

describe('named server prompts only on platform-paid calls', () => {
  it("never sent with the caller's own key (input apiKey, anonymous or not, or a stored key)", async () => {
    h = await createAiHarness({ billing: { vaultKey: 'v'.repeat(40) } });
    for (const who of [null, alice]) {
      const err = await rejection(
        h.caller(who).ai.generateText({ content: 'hi', systemPrompt: '@support', provider: 'openai', apiKey: USER_KEY }),
      );
      expect(err.details).toMatchObject({ reason: 'server_prompt_needs_platform', name: 'support' });
      expect((err as { code?: string }).code).toBe('FORBIDDEN');
    }
    // A stored BYOK key the billing rules pick (no platform balance): also the caller's account.
    await h.runtime.vault.store(alice.sub, 'openai', USER_KEY);
    await h.runtime.billing.preferences.update(alice.sub, { consumptionOrder: ['byok'], byokEnabled: true });
    const viaStored = await rejection(h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: '@support', provider: 'openai' }));
    expect(viaStored.details).toMatchObject({ reason: 'server_prompt_needs_platform' });
    expect(h.upstream.requests.some((r) => r.system === SYSTEM_PROMPT && r.apiKey === USER_KEY)).toBe(false);
    // Platform-paid: used.
    await h.credit(alice.sub, 100_000);
    await h.runtime.billing.preferences.update(alice.sub, { consumptionOrder: ['subscription', 'one_time', 'byok'] });
    await h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: '@support', provider: 'anthropic' });
    expect(h.upstream.requests.at(-1)).toMatchObject({ system: SYSTEM_PROMPT });
    expect(h.upstream.requests.filter((r) => r.system === SYSTEM_PROMPT).every((r) => r.apiKey !== USER_KEY)).toBe(true);
  });

  it('an operator may allow a prompt with caller keys, per prompt', async () => {
    h = await createAiHarness({
      ai: { systemPrompts: { shared: { text: 'SHAREABLE-PROMPT', allowWithCallerKeys: true }, secret: 'SECRET-PROMPT' } },
    });
    await h.caller(null).ai.generateText({ content: 'hi', systemPrompt: '@shared', provider: 'openai', apiKey: USER_KEY });
    expect(h.upstream.requests.at(-1)).toMatchObject({ system: 'SHAREABLE-PROMPT', apiKey: USER_KEY });
    const err = await rejection(
      h.caller(null).ai.generateText({ content: 'hi', systemPrompt: '@secret', provider: 'openai', apiKey: USER_KEY }),
    );
    expect(err.details).toMatchObject({ reason: 'server_prompt_needs_platform' });
  });
});
