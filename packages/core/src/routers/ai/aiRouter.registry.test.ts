import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_IDS, type ProviderId } from '../../config/sections/ai.js';
import { redactConfig } from '../../config/redact.js';
import { procedureIndex } from '../../pipeline/invoke.js';
import { alice, createAiHarness, rejection, SERVER_KEY, SYSTEM_PROMPT, USER_KEY, type AiHarness } from './__tests__/aiHarness.js';

let h: AiHarness;
afterEach(() => h?.close());
const code = (err: unknown) => (err as { code?: string }).code;

describe('ai.listProviders', () => {
  it('lists the four providers with server-paid flags and the registry source, never keys or URLs', async () => {
    h = await createAiHarness({ serverProviders: ['anthropic', 'google'] });
    const r = await h.caller(null).ai.listProviders();
    expect(r.providers.map((p) => p.id)).toEqual(['anthropic', 'openai', 'google', 'openrouter']);
    expect(r.providers.filter((p) => p.serverPaid).map((p) => p.id)).toEqual(['anthropic', 'google']);
    expect(r.providers.every((p) => p.byok)).toBe(true);
    expect(r.source.retrievedAt).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(r.source.urls.openai).toMatch(/^https:\/\//);
    expect(r.defaultProvider).toBe('anthropic');
    const text = JSON.stringify(r);
    expect(text).not.toContain(SERVER_KEY);
    expect(text).not.toContain(h.upstream.url);
  });

  it('a provider listed in serverProviders without a key is not server-paid, and a warning is logged', async () => {
    h = await createAiHarness({ ai: { providers: { openai: { apiKey: '' } } } });
    const r = await h.caller(null).ai.listProviders();
    expect(r.providers.find((p) => p.id === 'openai')!.serverPaid).toBe(false);
    expect(h.logs.some((l) => l.includes('serverProviders without a configured key'))).toBe(true);
  });

  it('reports config overrides in the source metadata', async () => {
    h = await createAiHarness({ ai: { models: { openai: { 'gpt-4o': { inputUsdPerMTok: 1 }, 'my-model': { contextWindow: 8192 } } } } });
    const r = await h.caller(null).ai.listProviders();
    expect(r.source.overrides).toBe(2);
    expect(h.runtime.ai.providers.models.get('openai', 'gpt-4o')).toMatchObject({
      inputUsdPerMTok: 1,
      outputUsdPerMTok: 10,
      origin: 'bundled+config',
    });
    expect(h.runtime.ai.providers.models.get('openai', 'my-model')).toMatchObject({ contextWindow: 8192, origin: 'config' });
  });
});

describe('ai.listProvidersBYOK', () => {
  it('defaults to all four and follows ai.byokProviders', async () => {
    h = await createAiHarness();
    expect((await h.caller(null).ai.listProvidersBYOK()).providers.map((p) => p.id)).toEqual([...PROVIDER_IDS]);
    await h.close();
    h = await createAiHarness({ ai: { byokProviders: ['google'] } });
    expect(await h.caller(null).ai.listProvidersBYOK()).toEqual({ providers: [{ id: 'google', name: 'Google' }] });
  });
});

describe('ai.listAllowedModels', () => {
  it('lists every provider, or one (aliases accepted), after allowed/blocked patterns', async () => {
    h = await createAiHarness({
      ai: { providers: { openai: { allowedModels: ['gpt-4*', 'my-finetune'], blockedModels: ['*-nano'], defaultModel: 'gpt-4o' } } },
    });
    const all = await h.caller(null).ai.listAllowedModels();
    if (!('models' in all) || Array.isArray(all.models)) throw new Error('expected the per-provider map');
    expect(Object.keys(all.models)).toEqual([...PROVIDER_IDS]);
    expect(all.models.anthropic).toContain('claude-sonnet-4-5');
    expect(all.models.openai).toEqual(['gpt-4.1', 'gpt-4.1-mini', 'gpt-4o', 'gpt-4o-mini', 'my-finetune']);
    const one = await h.caller(null).ai.listAllowedModels({ provider: 'provider_b' as ProviderId });
    expect(one).toEqual({ provider: 'openai', models: all.models.openai });
  });

  it('rejects an unknown provider', async () => {
    h = await createAiHarness();
    expect(code(await rejection(h.caller(null).ai.listAllowedModels({ provider: 'nope' as ProviderId })))).toBe('BAD_REQUEST');
  });
});

describe('ai.getRegistryHealth', () => {
  it('healthy by default, with summary metrics', async () => {
    h = await createAiHarness();
    const r = await h.caller(null).ai.getRegistryHealth();
    if (r.status === 'unhealthy') throw new Error(r.error.message);
    expect(r.status).toBe('healthy');
    expect(r.summary).toMatchObject({ providers: 4, serverPaidProviders: 4, byokProviders: 4 });
    expect(r.summary.models).toBeGreaterThanOrEqual(20);
    expect(r.summary.pricedModels).toBe(r.summary.models);
    expect(r.providers.google).toMatchObject({ available: true, calls: 0, failures: 0, lastFailure: null });
    const probe = await h.runtime.health.get('ai')!();
    expect(probe.ok).toBe(true);
  });

  it('unhealthy with error details when no provider is usable', async () => {
    h = await createAiHarness({ serverProviders: [], ai: { byokProviders: [] } });
    const r = await h.caller(null).ai.getRegistryHealth();
    expect(r).toMatchObject({ status: 'unhealthy', error: { message: expect.stringMatching(/no provider is usable/) } });
    expect((await h.runtime.health.get('ai')!()).ok).toBe(false);
  });
});

describe('ai.validateProvider', () => {
  it('a key the provider accepts is valid; the check is a real request with that key', async () => {
    h = await createAiHarness();
    for (const provider of ['anthropic', 'openai', 'google'] as const) {
      const r = await h.caller(null).ai.validateProvider({ provider, apiKey: USER_KEY });
      expect(r).toMatchObject({ provider, valid: true, status: 200 });
      const rec = h.upstream.requests.at(-1)!;
      expect(rec.method).toBe('GET');
      expect(rec.provider).toBe(provider);
      expect(rec.apiKey).toBe(USER_KEY);
      expect(JSON.stringify(r)).not.toContain(USER_KEY);
    }
  });

  it('tells an invalid key (401) from an unreachable provider and from a timeout', async () => {
    // A 2 s validation timeout: the answers before the timeout case must come within it on a loaded machine too.
    h = await createAiHarness({ ai: { validateTimeoutMs: 2000, providers: { google: { baseUrl: 'http://127.0.0.1:9/v1beta' } } } });
    const bad = await h.caller(null).ai.validateProvider({ provider: 'provider_a' as 'anthropic', apiKey: 'invalid-key' });
    expect(bad).toMatchObject({ provider: 'anthropic', valid: false, reason: 'invalid_key', status: 401 });
    expect(JSON.stringify(bad)).not.toContain('invalid-key');

    const down = await h.caller(null).ai.validateProvider({ provider: 'google', apiKey: USER_KEY });
    expect(down).toMatchObject({ valid: false, reason: 'unreachable' });

    h.upstream.setLatency(30_000);
    const started = performance.now();
    const slow = await h.caller(null).ai.validateProvider({ provider: 'openai', apiKey: USER_KEY });
    expect(slow).toMatchObject({ valid: false, reason: 'timeout' });
    // Answered at the 2 s validateTimeoutMs: well below the upstream's 30 s, with room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('accepts only the three-value enum, and requires a key', async () => {
    h = await createAiHarness();
    expect(code(await rejection(h.caller(null).ai.validateProvider({ provider: 'provider_d' as 'anthropic', apiKey: 'k' })))).toBe(
      'BAD_REQUEST',
    );
    expect(code(await rejection(h.caller(null).ai.validateProvider({ provider: 'openai', apiKey: '' })))).toBe('BAD_REQUEST');
    expect(h.upstream.requests).toHaveLength(0);
  });
});

describe('ai namespace wiring', () => {
  it('exposes generateText, listProviders and listAllowedModels as MCP tools; key-taking validateProvider is not one', async () => {
    h = await createAiHarness();
    const idx = procedureIndex(h.runtime.router);
    expect(idx.get('ai.generateText')?.type).toBe('mutation');
    expect(idx.get('ai.generateText')?.meta?.mcp).toBeDefined();
    expect(idx.get('ai.listProviders')?.meta?.mcp).toBeDefined();
    expect(idx.get('ai.listAllowedModels')?.meta?.mcp).toBeDefined();
    expect(idx.get('ai.validateProvider')?.type).toBe('mutation');
    expect(idx.get('ai.validateProvider')?.meta?.mcp).toBeUndefined();
  });

  it('admin.getConfig-style redaction hides server keys and system prompt texts', async () => {
    h = await createAiHarness();
    const text = JSON.stringify(redactConfig(h.runtime.config));
    expect(text).not.toContain(SERVER_KEY);
    expect(text).not.toContain(SYSTEM_PROMPT);
    expect(text).toContain('"support":"[redacted]"');
  });

  it('an authenticated call and an anonymous call see the same registry', async () => {
    h = await createAiHarness();
    expect(await h.caller(alice).ai.listProviders()).toEqual(await h.caller(null).ai.listProviders());
  });
});
