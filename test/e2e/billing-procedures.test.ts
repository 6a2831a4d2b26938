import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procedureIndex } from '@ai-backend/core/internal';
import {
  callVia,
  createTestUpstream,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type Entry,
  type Outcome,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Every procedure of the billing, user and auth namespaces over a real entry point (/rpc,
 * /trpc, and MCP for the ones that are tools), each with a success and a refusal. The last test
 * checks that none was left out.
 */
let upstream: TestUpstream;
let gw: AiServer;
const T: Record<'carol' | 'dave' | 'admin', string> = { carol: '', dave: '', admin: '' };
const CAROL = { sub: 'carol-sub', email: 'Carol@Example.com' };
const seen: string[] = [];
const covered = new Map<string, { ok: number; refused: number }>();

async function call(entry: Entry, who: keyof typeof T | null, path: string, input?: unknown): Promise<Outcome> {
  const out = await callVia(gw, entry, who ? T[who] : null, path, input, seen);
  const c = covered.get(path) ?? { ok: 0, refused: 0 };
  if (out.ok) c.ok++;
  else c.refused++;
  covered.set(path, c);
  return out;
}
const ok = (o: Outcome) => {
  if (!o.ok) throw new Error(`expected success, got ${o.code}: ${o.message}`);
  return o.data;
};
const refused = (code: string, message?: RegExp) =>
  expect.objectContaining({ ok: false, code, ...(message ? { message: expect.stringMatching(message) } : {}) });

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 20 });
  // One named provider that accepts own keys, for auth.storeProviderKey / deleteProviderKey.
  const providers = {
    ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers,
    mist: { type: 'mistral', baseUrl: upstream.namedBaseUrl('mist', 'mistral'), byok: true, defaultModel: 'mistral-small-latest' },
  };
  gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { providers } as never });
  T.carol = await tokenFor(CAROL.sub, { email: CAROL.email });
  T.dave = await tokenFor('dave-sub');
  T.admin = await tokenFor('boss-sub', { admin: true });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe('billing.creditTokens (admin only)', () => {
  it('an administrator credits both types; a replay changes nothing; a reused key with another amount conflicts', async () => {
    expect(
      ok(
        await call('rpc', 'admin', 'billing.creditTokens', {
          userId: CAROL.sub,
          tokens: 30_000,
          type: 'subscription',
          idempotencyKey: 'sub-1',
        }),
      ),
    ).toMatchObject({ applied: true, balance: 30_000 });
    expect(
      ok(
        await call('trpc', 'admin', 'billing.creditTokens', {
          userId: CAROL.sub,
          tokens: 5_000,
          type: 'one_time',
          idempotencyKey: 'pack-1',
        }),
      ),
    ).toMatchObject({ applied: true, balance: 5_000 });
    expect(
      ok(
        await call('rpc', 'admin', 'billing.creditTokens', {
          userId: CAROL.sub,
          tokens: 5_000,
          type: 'one_time',
          idempotencyKey: 'pack-1',
        }),
      ),
    ).toMatchObject({ applied: false, balance: 5_000 });
    expect(
      await call('rpc', 'admin', 'billing.creditTokens', { userId: CAROL.sub, tokens: 6_000, type: 'one_time', idempotencyKey: 'pack-1' }),
    ).toEqual(refused('CONFLICT'));
  });
  it('refused to users, to anonymous callers, with bad amounts or extra fields; not an MCP tool', async () => {
    const input = { userId: 'dave-sub', tokens: 1000, type: 'one_time', idempotencyKey: 'self-1' };
    expect(await call('rpc', 'dave', 'billing.creditTokens', input)).toEqual(refused('FORBIDDEN'));
    expect(await call('trpc', null, 'billing.creditTokens', input)).toEqual(refused('UNAUTHORIZED'));
    expect(await call('rpc', 'admin', 'billing.creditTokens', { ...input, tokens: 1.5 })).toEqual(refused('BAD_REQUEST'));
    expect(await call('rpc', 'admin', 'billing.creditTokens', { ...input, tokens: 0 })).toEqual(refused('BAD_REQUEST'));
    expect(await call('rpc', 'admin', 'billing.creditTokens', { ...input, bonus: 5 })).toEqual(refused('BAD_REQUEST'));
    expect(await call('mcp', 'admin', 'billing.creditTokens', input).catch((e: Error) => e.message)).toMatch(/unknown tool/);
    expect(ok(await call('rpc', 'dave', 'billing.getTokenBalance')).virtualTokenBalance).toBe(0);
  });
});

describe('billing reads', () => {
  beforeAll(async () => {
    // Two platform calls and one BYOK call to have history.
    ok(
      await call('rpc', 'carol', 'ai.generateText', {
        content: 'first call',
        systemPrompt: 's',
        provider: 'openai',
        metadata: { name: 'a', type: 't' },
        options: { maxTokens: 50 },
      }),
    );
    ok(
      await call('trpc', 'carol', 'ai.generateText', {
        content: 'second call',
        systemPrompt: 's',
        provider: 'google',
        options: { maxTokens: 50 },
      }),
    );
    ok(
      await call('rpc', 'carol', 'ai.generateText', {
        content: 'own key call',
        systemPrompt: 's',
        provider: 'anthropic',
        apiKey: 'sk-carol-inline-1234',
      }),
    );
  });
  const used1 = Math.ceil('sfirst call'.length / 4) + 20;
  const used2 = Math.ceil('ssecond call'.length / 4) + 20;
  const charged = (u: number) => u + Math.ceil(u * 0.1);

  it('getTokenBalance: balances and lifetime totals (over MCP too); anonymous refused', async () => {
    const b = ok(await call('rpc', 'carol', 'billing.getTokenBalance'));
    expect(b).toEqual({
      virtualTokenBalance: 35_000 - charged(used1) - charged(used2),
      balances: { subscription: 30_000 - charged(used1) - charged(used2), one_time: 5_000 },
      totalTokensPurchased: 35_000,
      totalTokensUsed: used1 + used2,
      platformFeeCollected: charged(used1) - used1 + charged(used2) - used2,
    });
    expect(ok(await call('mcp', 'carol', 'billing.getTokenBalance'))).toEqual(b);
    expect(await call('rpc', null, 'billing.getTokenBalance')).toEqual(refused('UNAUTHORIZED'));
  });

  it('getUserTokenBalances: one row per type and a summary; anonymous refused (401 over MCP)', async () => {
    const r = ok(await call('mcp', 'carol', 'billing.getUserTokenBalances'));
    expect(r.balances).toEqual([
      { balanceType: 'subscription', virtualTokenBalance: 30_000 - charged(used1) - charged(used2) },
      { balanceType: 'one_time', virtualTokenBalance: 5_000 },
    ]);
    expect(r.summary.totalTokens).toBe(35_000 - charged(used1) - charged(used2));
    expect(await call('trpc', null, 'billing.getUserTokenBalances')).toEqual(refused('UNAUTHORIZED'));
    const res = await fetch(gw.url + '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getUserTokenBalances', arguments: {} } }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('getPurchaseHistory: newest first, type filter; an unknown type is refused', async () => {
    const all = ok(await call('trpc', 'carol', 'billing.getPurchaseHistory'));
    expect(all.purchases.map((p: { type: string; tokens: number }) => [p.type, p.tokens])).toEqual([
      ['one_time', 5_000],
      ['subscription', 30_000],
    ]);
    expect(all.summary).toEqual({ totalPurchases: 2, totalTokens: 35_000, subscriptionPurchases: 1, oneTimePurchases: 1 });
    expect(ok(await call('rpc', 'carol', 'billing.getPurchaseHistory', { type: 'subscription', limit: 5 })).purchases).toHaveLength(1);
    expect(await call('rpc', 'carol', 'billing.getPurchaseHistory', { type: 'lifetime' })).toEqual(refused('BAD_REQUEST'));
  });

  it('getTopupHistory: one-time credits only; limit bounds enforced with a clear message', async () => {
    expect(ok(await call('rpc', 'carol', 'billing.getTopupHistory')).topups).toMatchObject([
      { type: 'one_time', tokens: 5_000, source: 'admin' },
    ]);
    expect(await call('rpc', 'carol', 'billing.getTopupHistory', { limit: 0 })).toEqual(refused('BAD_REQUEST'));
    const raw = await callVia(gw, 'rpc', T.carol, 'billing.getTopupHistory', { limit: 1001 });
    expect(JSON.stringify(raw)).toContain('limit must be an integer from 1 to 1000');
  });

  it('getUsageHistory: every finished call, platform and BYOK, with metadata; limit too large refused', async () => {
    const u = ok(await call('trpc', 'carol', 'billing.getUsageHistory', { limit: 10 })).usage;
    expect(u.map((x: { mode: string; provider: string }) => [x.mode, x.provider])).toEqual([
      ['byok', 'anthropic'],
      ['platform', 'google'],
      ['platform', 'openai'],
    ]);
    expect(u[2]).toMatchObject({ tokensUsed: used1, tokensCharged: charged(used1), metadata: { name: 'a', type: 't' } });
    expect(u[0]).toMatchObject({ tokensCharged: 0, estimatedCostUsd: expect.any(Number) });
    expect(await call('rpc', 'carol', 'billing.getUsageHistory', { limit: 5000 })).toEqual(refused('BAD_REQUEST'));
  });

  it('getConsumptionHistory: which balance paid each call; a negative limit is refused', async () => {
    const c = ok(await call('rpc', 'carol', 'billing.getConsumptionHistory')).consumption;
    expect(c.map((x: { paidBy: unknown }) => x.paidBy)).toEqual([
      'byok',
      { subscription: charged(used2) },
      { subscription: charged(used1) },
    ]);
    expect(await call('trpc', 'carol', 'billing.getConsumptionHistory', { limit: -1 })).toEqual(refused('BAD_REQUEST'));
  });

  it('getUsageAnalytics: totals per day, provider and model, optional history; days out of range refused', async () => {
    const a = ok(await call('mcp', 'carol', 'billing.getUsageAnalytics', { days: 7, includeHistory: true, historyLimit: 2 }));
    expect(a.totals).toMatchObject({ requests: 3, platformRequests: 2, byokRequests: 1, tokensCharged: charged(used1) + charged(used2) });
    expect(a.byDay).toHaveLength(1);
    expect(Object.keys(a.byProvider).sort()).toEqual(['anthropic', 'google', 'openai']);
    expect(Object.keys(a.byModel).sort()).toEqual(['anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash', 'openai/gpt-5-mini']);
    expect(a.history).toHaveLength(2);
    expect(ok(await call('rpc', 'carol', 'billing.getUsageAnalytics')).history).toBeUndefined();
    expect(await call('rpc', 'carol', 'billing.getUsageAnalytics', { days: 366 })).toEqual(refused('BAD_REQUEST'));
    expect(await call('mcp', 'carol', 'billing.getUsageAnalytics', { historyLimit: 0 })).toEqual(refused('BAD_REQUEST'));
  });

  it('getBudget: no budget, yet the period spend of platform calls is kept (a budget set later counts it); anonymous refused', async () => {
    const b = ok(await call('mcp', 'carol', 'billing.getBudget'));
    expect(b.userId).toBe(CAROL.sub);
    expect(b.periods.map((p: { period: string }) => p.period)).toEqual(['daily', 'monthly']);
    expect(b.periods[0]).toMatchObject({
      source: null,
      limits: { tokens: null, usd: null },
      spent: { tokens: used1 + used2 },
      reserved: { tokens: 0 },
    });
    expect(b.periods[0].spent.usd).toBeGreaterThan(0);
    expect(await call('rpc', null, 'billing.getBudget')).toEqual(refused('UNAUTHORIZED'));
  });

  it('planConsumption: subscription first, fee included; estimatedTokens required and bounded', async () => {
    const p = ok(await call('rpc', 'carol', 'billing.planConsumption', { estimatedTokens: 1000 }));
    expect(p).toMatchObject({
      payer: 'platform',
      totalTokensNeeded: 1100,
      viable: true,
      plan: [{ source: 'subscription', tokensToConsume: 1100 }],
    });
    const big = ok(await call('mcp', 'carol', 'billing.planConsumption', { estimatedTokens: 1_000_000 }));
    expect(big).toMatchObject({ payer: 'none', viable: false });
    expect(await call('rpc', 'carol', 'billing.planConsumption', {})).toEqual(refused('BAD_REQUEST'));
    expect(await call('trpc', 'carol', 'billing.planConsumption', { estimatedTokens: 10_000_001 })).toEqual(refused('BAD_REQUEST'));
  });
});

describe('auth key vault', () => {
  it('storeUserKey by email (any case) or sub; status only, last four characters', async () => {
    const s = ok(
      await call('trpc', 'carol', 'auth.storeUserKey', {
        email: 'carol@example.com',
        provider: 'openai',
        apiKey: 'sk-carol-openai-SECRET-9876',
      }),
    );
    expect(s).toMatchObject({ success: true, exists: true, provider: 'openai', last4: '9876' });
    expect(
      Object.keys(s).every((k) => ['success', 'exists', 'provider', 'last4', 'createdAt', 'rotatedAt', 'validatedAt'].includes(k)),
    ).toBe(true);
    expect(
      ok(await call('rpc', 'carol', 'auth.storeUserKey', { email: CAROL.sub, provider: 'provider_c', apiKey: 'invalid-google-SECRET-55' })),
    ).toMatchObject({ provider: 'google', last4: 'T-55' });
  });
  it('storeUserKey refuses another email, a short or spaced key, and openrouter', async () => {
    expect(
      await call('rpc', 'carol', 'auth.storeUserKey', {
        email: 'dave-sub@example.com',
        provider: 'openai',
        apiKey: 'sk-carol-into-dave-1',
      }),
    ).toEqual(refused('FORBIDDEN'));
    expect(await call('rpc', 'carol', 'auth.storeUserKey', { email: CAROL.email, provider: 'openai', apiKey: 'short' })).toEqual(
      refused('BAD_REQUEST'),
    );
    expect(
      await call('trpc', 'carol', 'auth.storeUserKey', { email: CAROL.email, provider: 'openai', apiKey: 'sk has spaces 123' }),
    ).toEqual(refused('BAD_REQUEST'));
    expect(
      await call('rpc', 'carol', 'auth.storeUserKey', { email: CAROL.email, provider: 'openrouter', apiKey: 'sk-or-carol-123456' }),
    ).toEqual(refused('BAD_REQUEST'));
  });
  it('getUserKey and getUserProviders: status for the owner; others refused', async () => {
    expect(ok(await call('rpc', 'carol', 'auth.getUserKey', { email: CAROL.email, provider: 'openai' }))).toMatchObject({
      exists: true,
      last4: '9876',
    });
    expect(ok(await call('rpc', 'carol', 'auth.getUserKey', { email: CAROL.email, provider: 'anthropic' }))).toMatchObject({
      exists: false,
    });
    expect(ok(await call('trpc', 'carol', 'auth.getUserProviders', { email: CAROL.email })).providers.sort()).toEqual(['google', 'openai']);
    expect(await call('rpc', 'dave', 'auth.getUserKey', { email: CAROL.email, provider: 'openai' })).toEqual(refused('FORBIDDEN'));
    expect(await call('trpc', 'dave', 'auth.getUserProviders', { email: CAROL.sub })).toEqual(refused('FORBIDDEN'));
  });
  it('validateUserKey: a real request with the stored key; invalid key reported; no key → NOT_FOUND', async () => {
    const before = upstream.requests.length;
    const v = ok(await call('rpc', 'carol', 'auth.validateUserKey', { email: CAROL.email, provider: 'openai' }));
    expect(v).toMatchObject({ provider: 'openai', valid: true, validatedAt: expect.any(String) });
    expect(upstream.requests[before]).toMatchObject({ method: 'GET', apiKey: 'sk-carol-openai-SECRET-9876' });
    expect(ok(await call('rpc', 'carol', 'auth.getUserKey', { email: CAROL.email, provider: 'openai' })).validatedAt).toBe(v.validatedAt);
    expect(ok(await call('trpc', 'carol', 'auth.validateUserKey', { email: CAROL.email, provider: 'google' }))).toMatchObject({
      valid: false,
      reason: 'invalid_key',
    });
    expect(await call('rpc', 'carol', 'auth.validateUserKey', { email: CAROL.email, provider: 'anthropic' })).toEqual(refused('NOT_FOUND'));
    expect(await call('rpc', 'dave', 'auth.validateUserKey', { email: CAROL.email, provider: 'openai' })).toEqual(refused('FORBIDDEN'));
  });
  it('rotateUserKey: keeps createdAt, sets rotatedAt, clears validatedAt; nothing to rotate → NOT_FOUND', async () => {
    const old = ok(await call('rpc', 'carol', 'auth.getUserKey', { email: CAROL.email, provider: 'openai' }));
    const r = ok(
      await call('trpc', 'carol', 'auth.rotateUserKey', {
        email: CAROL.email,
        provider: 'openai',
        newApiKey: 'sk-carol-openai-NEWKEY-4321',
      }),
    );
    expect(r).toMatchObject({ success: true, last4: '4321', createdAt: old.createdAt, rotatedAt: expect.any(String) });
    expect(r.validatedAt ?? null).toBeNull();
    expect(
      await call('rpc', 'carol', 'auth.rotateUserKey', { email: CAROL.email, provider: 'anthropic', newApiKey: 'sk-nothing-here-1' }),
    ).toEqual(refused('NOT_FOUND'));
  });
  it('deleteUserKey: the owner deletes; a second delete reports false; another user is refused', async () => {
    expect(await call('rpc', 'dave', 'auth.deleteUserKey', { email: CAROL.email, provider: 'google' })).toEqual(refused('FORBIDDEN'));
    expect(ok(await call('rpc', 'carol', 'auth.deleteUserKey', { email: CAROL.email, provider: 'google' }))).toEqual({
      success: true,
      provider: 'google',
      deleted: true,
    });
    expect(ok(await call('trpc', 'carol', 'auth.deleteUserKey', { email: CAROL.email, provider: 'google' }))).toEqual({
      success: false,
      provider: 'google',
      deleted: false,
    });
  });
  it('an administrator may name another user by sub or (seen) email', async () => {
    expect(ok(await call('rpc', 'admin', 'auth.getUserKey', { email: CAROL.sub, provider: 'openai' }))).toMatchObject({
      exists: true,
      last4: '4321',
    });
    expect(ok(await call('rpc', 'admin', 'auth.getUserProviders', { email: 'carol@example.com' }))).toEqual({ providers: ['openai'] });
  });
});

describe('user namespace', () => {
  it('checkRequestEligibility over MCP: tokens cover it; too large needs a key; bounds enforced', async () => {
    expect(ok(await call('mcp', 'carol', 'user.checkRequestEligibility', { estimatedTokens: 100 }))).toMatchObject({
      canMakeRequest: true,
      mode: 'platform',
      estimatedCost: 110,
      requiresApiKey: false,
    });
    expect(ok(await call('rpc', 'dave', 'user.checkRequestEligibility'))).toMatchObject({
      canMakeRequest: false,
      mode: 'none',
      requiresApiKey: true,
      tokenBalance: 0,
    });
    expect(ok(await call('rpc', 'dave', 'user.checkRequestEligibility', { hasApiKey: true }))).toMatchObject({
      canMakeRequest: true,
      mode: 'byok',
    });
    expect(await call('rpc', 'carol', 'user.checkRequestEligibility', { estimatedTokens: -5 })).toEqual(refused('BAD_REQUEST'));
    expect(await call('rpc', null, 'user.checkRequestEligibility')).toEqual(refused('UNAUTHORIZED'));
  });
  it('configureBYOK stores keys and enables BYOK; unknown providers are refused', async () => {
    const r = ok(
      await call('trpc', 'dave', 'user.configureBYOK', {
        providers: { provider_a: { enabled: true, apiKey: 'sk-dave-anthropic-SECRET-1' }, openai: { enabled: false } },
      }),
    );
    expect(r).toEqual({ success: true, byokEnabled: true, providersConfigured: ['anthropic'], keysStored: ['anthropic'] });
    expect(await call('rpc', 'dave', 'user.configureBYOK', { providers: { mistral: { enabled: true } } })).toEqual(
      refused('BAD_REQUEST', /unknown provider/),
    );
    expect(await call('rpc', 'dave', 'user.configureBYOK', {})).toEqual(refused('BAD_REQUEST'));
  });
  it('getBYOKStatus shows switches and last four, never keys; anonymous refused', async () => {
    const s = ok(await call('rpc', 'dave', 'user.getBYOKStatus'));
    expect(s).toMatchObject({
      byokEnabled: true,
      hasConfiguredProviders: true,
      providers: { anthropic: { enabled: true, hasApiKey: true, last4: 'ET-1' }, openai: { enabled: false, hasApiKey: false } },
    });
    expect(await call('trpc', null, 'user.getBYOKStatus')).toEqual(refused('UNAUTHORIZED'));
  });
  it('a BYOK-only user then generates with the stored key and pays nothing', async () => {
    const r = ok(await call('rpc', 'dave', 'ai.generateText', { content: 'with my stored key', systemPrompt: 's', provider: 'anthropic' }));
    expect(r.usageInfo).toBeDefined();
    expect(upstream.requests.at(-1)!.apiKey).toBe('sk-dave-anthropic-SECRET-1');
  });
  it('getUserProfile: capabilities, balances and preferences; anonymous refused', async () => {
    const p = ok(await call('trpc', 'carol', 'user.getUserProfile'));
    expect(p).toMatchObject({
      userId: CAROL.sub,
      email: CAROL.email,
      isAdmin: false,
      capabilities: { platformTokens: true, byok: false },
      preferences: { consumptionOrder: ['subscription', 'one_time', 'byok'], byokEnabled: false },
    });
    expect(ok(await call('rpc', 'dave', 'user.getUserProfile')).capabilities).toEqual({
      platformTokens: false,
      byok: true,
      byokProviders: ['anthropic'],
    });
    expect(ok(await call('rpc', 'admin', 'user.getUserProfile')).isAdmin).toBe(true);
    expect(await call('rpc', null, 'user.getUserProfile')).toEqual(refused('UNAUTHORIZED'));
  });
  it('getUserStatus: subscription vs BYOK, purchases; anonymous refused', async () => {
    expect(ok(await call('rpc', 'carol', 'user.getUserStatus'))).toMatchObject({
      userType: 'subscription',
      hasSubscription: true,
      totalPurchases: 2,
      totalTokensPurchased: 35_000,
    });
    expect(ok(await call('trpc', 'dave', 'user.getUserStatus'))).toMatchObject({
      userType: 'byok',
      hasPurchases: false,
      byokEnabled: true,
    });
    expect(await call('rpc', null, 'user.getUserStatus')).toEqual(refused('UNAUTHORIZED'));
  });
  it('updateUserPreferences merges and validates; one_time first then drains the one-time balance', async () => {
    const r = ok(
      await call('rpc', 'carol', 'user.updateUserPreferences', {
        consumptionOrder: ['one_time', 'subscription'],
        notifyTokenLowThreshold: 100,
      }),
    );
    expect(r.preferences).toMatchObject({
      consumptionOrder: ['one_time', 'subscription'],
      notifyTokenLowThreshold: 100,
      byokEnabled: false,
    });
    expect(await call('rpc', 'carol', 'user.updateUserPreferences', { consumptionOrder: ['one_time', 'one_time'] })).toEqual(
      refused('BAD_REQUEST', /repeat/),
    );
    expect(await call('trpc', 'carol', 'user.updateUserPreferences', { consumptionOrder: ['gold'] })).toEqual(refused('BAD_REQUEST'));
    expect(await call('rpc', 'carol', 'user.updateUserPreferences', { notifyTokenLowThreshold: -1 })).toEqual(refused('BAD_REQUEST'));
    const plan = ok(await call('rpc', 'carol', 'billing.planConsumption', { estimatedTokens: 100 }));
    expect(plan.plan).toEqual([{ source: 'one_time', tokensToConsume: 110, reason: 'one_time tokens' }]);
    const gen = ok(
      await call('rpc', 'carol', 'ai.generateText', {
        content: 'from one-time',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 20 },
      }),
    );
    const bal = ok(await call('rpc', 'carol', 'billing.getTokenBalance')).balances;
    expect(bal.one_time).toBe(5_000 - gen.tokenUsage.tokensCharged);
  });
});

describe('auth.storeProviderKey / deleteProviderKey (named providers)', () => {
  it('stores and deletes a key for a named provider that accepts own keys; refuses built-ins, unknown ids and other users', async () => {
    expect(
      ok(await call('rpc', 'carol', 'auth.storeProviderKey', { email: CAROL.email, provider: 'mist', apiKey: 'sk-carol-mist-SECRET-42' })),
    ).toMatchObject({ success: true, provider: 'mist', last4: 'T-42' });
    expect(ok(await call('trpc', 'carol', 'auth.getUserProviders', { email: CAROL.email })).providers).toContain('mist');
    expect(
      await call('rpc', 'carol', 'auth.storeProviderKey', { email: CAROL.email, provider: 'openai', apiKey: 'sk-carol-openai-SECRET-1' }),
    ).toEqual(refused('BAD_REQUEST'));
    expect(
      await call('rpc', 'carol', 'auth.storeProviderKey', {
        email: 'dave-sub@example.com',
        provider: 'mist',
        apiKey: 'sk-carol-into-dave-2',
      }),
    ).toEqual(refused('FORBIDDEN'));
    expect(await call('rpc', null, 'auth.deleteProviderKey', { email: CAROL.email, provider: 'mist' })).toEqual(refused('UNAUTHORIZED'));
    expect(ok(await call('trpc', 'carol', 'auth.deleteProviderKey', { email: CAROL.email, provider: 'mist' }))).toMatchObject({
      deleted: true,
    });
  });
});

describe('coverage and leaks', () => {
  it('every billing.*, user.* and auth.* procedure was called over a real entry point, with a success and a refusal', () => {
    const paths = [...procedureIndex(gw.runtime.router).keys()].filter((p) => /^(billing|user|auth)\./.test(p)).sort();
    expect(paths).toHaveLength(24);
    for (const p of paths) {
      expect(covered.get(p)?.ok, `${p} success`).toBeGreaterThan(0);
      expect(covered.get(p)?.refused, `${p} refusal`).toBeGreaterThan(0);
    }
  });
  it('no stored or inline key appears in any response or log line', () => {
    const all = seen.join('\n') + gw.logs.join('\n');
    expect(seen.length).toBeGreaterThan(50);
    expect(all).not.toContain('SECRET');
    expect(all).not.toContain('NEWKEY');
    expect(all).not.toContain('sk-carol-inline');
  });
});
