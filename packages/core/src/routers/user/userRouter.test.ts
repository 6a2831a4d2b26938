import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, call, makeRuntime, type OpenStore } from '../../services/billing/__tests__/kit.js';

const KEY = 'sk-alice-openai-SECRET-000000-4242';

describe.each(backends)('user router on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  const logs: string[] = [];
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    logs.length = 0;
    store = await backend.open('user-router');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } }, logs);
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it.each([
    ['user.checkRequestEligibility', {}],
    ['user.configureBYOK', { providers: {} }],
    ['user.getBYOKStatus', undefined],
    ['user.getUserProfile', undefined],
    ['user.getUserStatus', undefined],
    ['user.updateUserPreferences', {}],
  ])('%s needs an identity', async (path, input) => {
    await expect(call(rt, path, input, null)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('configureBYOK stores keys encrypted and reports status without them', async () => {
    const res = await call(
      rt,
      'user.configureBYOK',
      { providers: { provider_b: { enabled: true, apiKey: KEY }, google: { enabled: false } } },
      alice,
    );
    expect(res).toEqual({ success: true, byokEnabled: true, providersConfigured: ['openai'], keysStored: ['openai'] });
    const status = await call(rt, 'user.getBYOKStatus', undefined, alice);
    expect(status).toMatchObject({
      byokEnabled: true,
      hasConfiguredProviders: true,
      providers: { openai: { enabled: true, hasApiKey: true, last4: '4242' }, google: { enabled: false, hasApiKey: false } },
    });
    expect(await rt.vault.reveal(alice.sub, 'openai')).toBe(KEY);
    expect((await call(rt, 'user.getBYOKStatus', undefined, bob)).providers).toEqual({});
    const everything =
      JSON.stringify([res, status, await call(rt, 'user.getUserProfile', undefined, alice)]) + logs.join('\n') + (await store.dump());
    expect(everything).not.toContain('SECRET');
  });

  it('configureBYOK refuses unknown providers and malformed keys with clear errors', async () => {
    const e1 = await call(rt, 'user.configureBYOK', { providers: { mistral: { enabled: true } } }, alice).catch((e: unknown) => e);
    expect(e1).toMatchObject({ code: 'BAD_REQUEST' });
    expect((e1 as Error).message).toContain('mistral');
    expect((e1 as Error).message).toContain('allowed: anthropic, openai, google');
    await expect(
      call(rt, 'user.configureBYOK', { providers: { openai: { enabled: true, apiKey: 'short' } } }, alice),
    ).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(
      call(rt, 'user.configureBYOK', { providers: { openai: { enabled: true, apiKey: 'has spaces in it' } } }, alice),
    ).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('updateUserPreferences merges and validates', async () => {
    const r = await call(
      rt,
      'user.updateUserPreferences',
      { consumptionOrder: ['one_time', 'subscription'], notifyTokenLowThreshold: 50 },
      alice,
    );
    expect(r.preferences).toMatchObject({
      consumptionOrder: ['one_time', 'subscription'],
      notifyTokenLowThreshold: 50,
      byokEnabled: false,
      notifyFallbackToByok: true,
    });
    const r2 = await call(
      rt,
      'user.updateUserPreferences',
      {
        byokEnabled: true,
        byokProviders: { provider_a: { enabled: true, apiKey: 'sk-ant-alice-00000000000' } },
        notifyOneTimeConsumed: false,
      },
      alice,
    );
    expect(r2.preferences).toMatchObject({
      consumptionOrder: ['one_time', 'subscription'],
      byokEnabled: true,
      byokProviders: { anthropic: { enabled: true } },
      notifyOneTimeConsumed: false,
    });
    expect(JSON.stringify(r2)).not.toContain('sk-ant-alice');
    expect(await rt.vault.providers(alice.sub)).toEqual(['anthropic']);
    await expect(call(rt, 'user.updateUserPreferences', { consumptionOrder: ['byok', 'byok'] }, alice)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(call(rt, 'user.updateUserPreferences', { consumptionOrder: ['credit_card'] }, alice)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(call(rt, 'user.updateUserPreferences', { consumptionOrder: [] }, alice)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(call(rt, 'user.updateUserPreferences', { notifyTokenLowThreshold: -1 }, alice)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect((await call(rt, 'user.getUserProfile', undefined, bob)).preferences.consumptionOrder).toEqual([
      'subscription',
      'one_time',
      'byok',
    ]);
  });

  it('checkRequestEligibility: tokens, a request key, a stored key, or neither', async () => {
    expect(await call(rt, 'user.checkRequestEligibility', undefined, alice)).toMatchObject({
      canMakeRequest: false,
      mode: 'none',
      requiresApiKey: true,
      estimatedCost: 1100,
    });
    expect(await call(rt, 'user.checkRequestEligibility', { hasApiKey: true }, alice)).toMatchObject({
      canMakeRequest: true,
      mode: 'byok',
    });
    await rt.billing.credit({ userId: alice.sub, tokens: 1100, type: 'one_time', idempotencyKey: 'k', source: 'test' });
    expect(await call(rt, 'user.checkRequestEligibility', { estimatedTokens: 1000 }, alice)).toMatchObject({
      canMakeRequest: true,
      mode: 'platform',
      tokenBalance: 1100,
    });
    expect(await call(rt, 'user.checkRequestEligibility', { estimatedTokens: 1001 }, alice)).toMatchObject({ canMakeRequest: false });
    await call(rt, 'user.configureBYOK', { providers: { openai: { enabled: true, apiKey: KEY } } }, alice);
    expect(await call(rt, 'user.checkRequestEligibility', { estimatedTokens: 1001, provider: 'openai' }, alice)).toMatchObject({
      canMakeRequest: true,
      mode: 'byok',
    });
    expect(await call(rt, 'user.checkRequestEligibility', { estimatedTokens: 1001, provider: 'google' }, alice)).toMatchObject({
      canMakeRequest: false,
    });
    const err = await call(rt, 'user.checkRequestEligibility', { estimatedTokens: 20_000_000 }, alice).catch((e: unknown) => e);
    expect((err as Error).message).toContain('estimatedTokens must be an integer from 0 to 10000000');
  });

  it('profile and status follow purchases and BYOK', async () => {
    expect(await call(rt, 'user.getUserStatus', undefined, alice)).toMatchObject({
      userType: 'none',
      hasPurchases: false,
      totalPurchases: 0,
    });
    await call(rt, 'user.configureBYOK', { providers: { openai: { enabled: true, apiKey: KEY } } }, alice);
    expect(await call(rt, 'user.getUserStatus', undefined, alice)).toMatchObject({ userType: 'byok', byokEnabled: true });
    await rt.billing.credit({ userId: alice.sub, tokens: 3000, type: 'subscription', idempotencyKey: 'k', source: 'webhook' });
    const status = await call(rt, 'user.getUserStatus', undefined, alice);
    expect(status).toMatchObject({
      userType: 'subscription',
      hasSubscription: true,
      hasPurchases: true,
      totalPurchases: 1,
      totalTokensPurchased: 3000,
      balances: { subscription: 3000, one_time: 0 },
    });
    expect(status.recentPurchases).toMatchObject([{ type: 'subscription', tokens: 3000, source: 'webhook' }]);
    const profile = await call(rt, 'user.getUserProfile', undefined, alice);
    expect(profile).toMatchObject({
      userId: alice.sub,
      email: alice.email,
      isAdmin: false,
      capabilities: { platformTokens: true, byok: true, byokProviders: ['openai'] },
    });
  });
});
