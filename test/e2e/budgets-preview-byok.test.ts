import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens } from '@ai-backend/core/internal';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  SERVER_KEY,
  sleep,
  startAiServer,
  tokenFor,
  trpcClient,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { webhookReceiver } from './helpers/webhookReceiver.js';

/**
 * Budgets seen before a call and met by BYOK, over a real server: the previews
 * (billing.planConsumption, user.checkRequestEligibility) refuse exactly what the reservation
 * refuses, with the same figures; and a call the platform budget refuses goes to the caller's
 * stored key (fallbackToByok alert, reason 'budget') when their consumption order allows it.
 */
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 50;
/** Same length for every tag, so every call has the same worst case. */
const content = (tag: string, i: number) => `${tag.padEnd(20, '.').slice(0, 20)} call ${String(i).padStart(3, '0')}`;
/** Tokens each call holds against the budget, and (with this upstream) uses. */
const WORST = estimateTokens(content('x', 0), SYSTEM, MAX_TOKENS);
const ask = (tag: string, i: number, over: Record<string, unknown> = {}) => ({
  content: content(tag, i),
  systemPrompt: SYSTEM,
  provider: 'openai',
  options: { maxTokens: MAX_TOKENS },
  ...over,
});

let upstream: TestUpstream;
let hook: Awaited<ReturnType<typeof webhookReceiver>>;
let s: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 1000, countInputTokens: (system, text) => estimateTokens(text, system, 0) });
  hook = await webhookReceiver();
  s = await startAiServer(upstream, {
    storage: { type: 'memory' },
    alerts: {
      webhooks: [{ url: hook.url, secret: 'budget-byok-secret-0123456789abcdefghij', events: ['fallbackToByok', 'budgetExceeded'] }],
      pollIntervalMs: 20,
      retryBaseMs: 100,
    },
  });
  admin = await tokenFor('budget-preview-admin', { admin: true });
});
afterAll(async () => {
  await s?.stop();
  await hook?.close();
  await upstream?.close();
});

describe('budget previews agree with the reservation', () => {
  it('planConsumption (/rpc) and checkRequestEligibility (tRPC) show a call the budget refuses as not viable, with the refusal the call then gets', async () => {
    const sub = 'preview-user-1';
    const user = await tokenFor(sub);
    const limit = 2 * WORST + Math.floor(WORST / 2);
    await trpcClient(s.url, admin).admin.setBudget.mutate({ userId: sub, period: 'daily', tokens: limit });
    await creditTokens(s.url, admin, sub, 1_000_000, `preview-${sub}`);

    const before = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: WORST, provider: 'openai' })).result;
    expect(before).toMatchObject({ payer: 'platform', viable: true, budget: null, platformRefusedBy: null });
    for (const i of [0, 1])
      expect((await rpcCall(s.url, user, 'ai.generateText', ask('preview', i))).result.tokenUsage.tokensUsed).toBe(WORST);

    // Half a call is left: a call of WORST is refused, a smaller one is not.
    const plan = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: WORST, provider: 'openai' })).result;
    expect(plan).toMatchObject({ payer: 'none', viable: false, platformRefusedBy: 'budget', plan: [] });
    expect(plan.budget).toMatchObject({
      period: 'daily',
      metric: 'tokens',
      limit,
      spent: 2 * WORST,
      reserved: 0,
      requested: WORST,
      reason: 'budget_exceeded',
    });
    expect(Date.parse(plan.budget.resetsAt)).toBe(Date.parse(new Date().toISOString().slice(0, 10)) + 86_400_000);
    expect(plan.notifications[0]).toContain(`daily budget of ${limit} tokens`);

    const eligibility = await trpcClient(s.url, user).user.checkRequestEligibility.query({ estimatedTokens: WORST, provider: 'openai' });
    expect(eligibility).toMatchObject({ canMakeRequest: false, mode: 'none', requiresApiKey: true });
    expect(eligibility.reason).toBe(plan.notifications[0]);
    expect(eligibility.budget).toEqual(plan.budget);
    const small = await trpcClient(s.url, user).user.checkRequestEligibility.query({
      estimatedTokens: Math.floor(WORST / 4),
      provider: 'openai',
    });
    expect(small).toMatchObject({ canMakeRequest: true, mode: 'platform', budget: null });

    const refused = await rpcCall(s.url, user, 'ai.generateText', ask('preview', 2));
    expect(refused.error!.data).toMatchObject({ code: 'PAYMENT_REQUIRED' });
    expect(refused.error!.data!.details).toEqual(plan.budget);
  });

  it('a money budget: the preview prices the model it is given, and an unpriced model is refused as the call would be', async () => {
    const sub = 'preview-user-2';
    const user = await tokenFor(sub);
    await trpcClient(s.url, admin).admin.setBudget.mutate({ userId: sub, period: 'monthly', usd: 0.001 });
    await creditTokens(s.url, admin, sub, 1_000_000, `preview-${sub}`);
    // gpt-5-mini: at most 2 USD per million tokens, so 400 tokens fit 0.001 USD and 1000 do not.
    const fits = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: 400, provider: 'openai', model: 'gpt-5-mini' }))
      .result;
    expect(fits).toMatchObject({ viable: true, payer: 'platform', budget: null });
    const over = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: 1000, provider: 'openai', model: 'gpt-5-mini' }))
      .result;
    expect(over).toMatchObject({
      viable: false,
      budget: { period: 'monthly', metric: 'usd', limit: 0.001, spent: 0, reserved: 0, requested: 0.002, reason: 'budget_exceeded' },
    });
    const unpriced = await trpcClient(s.url, user).user.checkRequestEligibility.query({
      estimatedTokens: 10,
      provider: 'openai',
      model: 'unlisted-local-model',
    });
    expect(unpriced).toMatchObject({ canMakeRequest: false, budget: { metric: 'usd', reason: 'model_not_priced', requested: null } });
    const call = await rpcCall(
      s.url,
      user,
      'ai.generateText',
      ask('preview', 3, { options: { model: 'unlisted-local-model', maxTokens: 10 } }),
    );
    expect(call.error!.data!.details).toEqual({ ...unpriced.budget });
  });
});

describe('a money budget at its exact limit', () => {
  it("a limit of exactly N calls' cost admits N calls and refuses the next, though the cost is not a whole micro-dollar", async () => {
    const sub = 'exact-usd-user';
    const user = await tokenFor(sub);
    await creditTokens(s.url, admin, sub, 1_000_000, `exact-${sub}`);
    // One byte more than the other tests' calls: an input size whose cost is not whole micro-dollars.
    const exact = (i: number) => ask('exact', i, { content: content('exact', i) + '!' });
    expect((await rpcCall(s.url, user, 'ai.generateText', exact(0))).result).toBeDefined();
    const cost = (await rpcCall(s.url, user, 'billing.getUsageHistory', { limit: 1 })).result.usage[0].estimatedCostUsd as number;
    expect(Math.round(cost * 1e6)).not.toBe(cost * 1e6); // the case that rounding per call got wrong
    await trpcClient(s.url, admin).admin.setBudget.mutate({ userId: sub, period: 'daily', usd: 4 * cost });
    expect((await rpcCall(s.url, user, 'ai.generateText', exact(1))).result).toBeDefined();
    // What is left is shown to the nano-dollar too: two calls' cost, not rounded to micro-dollars.
    expect((await rpcCall(s.url, user, 'billing.getBudget')).result.periods[0].remaining.usd).toBeCloseTo(2 * cost, 12);
    for (const i of [2, 3]) expect((await rpcCall(s.url, user, 'ai.generateText', exact(i))).result, `call ${i}`).toBeDefined();
    const view = (await rpcCall(s.url, user, 'billing.getBudget')).result.periods[0];
    expect(view.spent.usd).toBeCloseTo(4 * cost, 12);
    expect(view.remaining.usd).toBeCloseTo(0, 12);
    const refused = await rpcCall(s.url, user, 'ai.generateText', exact(4));
    expect(refused.error!.data).toMatchObject({ code: 'PAYMENT_REQUIRED', details: { metric: 'usd', reason: 'budget_exceeded' } });
  });
});

describe('a platform budget refusal falls back to the stored key', () => {
  it('goes to the stored key (not platform spend), raises fallbackToByok with reason budget, over /rpc and tRPC, generateText and streamText', async () => {
    const sub = 'byok-budget-user';
    const user = await tokenFor(sub);
    const ownKey = 'sk-byok-budget-user-own-0001';
    await trpcClient(s.url, admin).admin.setBudget.mutate({ userId: sub, period: 'daily', tokens: WORST + Math.floor(WORST / 2) });
    await creditTokens(s.url, admin, sub, 1_000_000, `byok-${sub}`);
    await trpcClient(s.url, user).user.configureBYOK.mutate({ providers: { openai: { enabled: true, apiKey: ownKey } } });

    const first = await rpcCall(s.url, user, 'ai.generateText', ask('byokbudget', 0));
    expect(first.result.tokenUsage.tokensUsed).toBe(WORST);
    expect(upstream.requests.at(-1)!.apiKey).toBe(SERVER_KEY);
    const balance = (await rpcCall(s.url, user, 'billing.getTokenBalance')).result.virtualTokenBalance;

    // The preview says what the call will do.
    const plan = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: WORST, provider: 'openai' })).result;
    expect(plan).toMatchObject({
      payer: 'byok',
      viable: true,
      fallback: true,
      platformRefusedBy: 'budget',
      budget: { metric: 'tokens', spent: WORST },
    });

    const second = await rpcCall(s.url, user, 'ai.generateText', ask('byokbudget', 1));
    if (!second.result) throw new Error(second.text);
    expect(second.result.tokenUsage ?? null).toBeNull();
    expect(second.result.usageInfo).toMatchObject({ tokensUsed: WORST });
    expect(upstream.requests.at(-1)).toMatchObject({ apiKey: ownKey, content: content('byokbudget', 1) });
    const third = await trpcClient(s.url, user).ai.generateText.mutate(ask('byokbudget', 2) as never);
    expect((third as { usageInfo?: unknown }).usageInfo).toBeDefined();
    expect(upstream.requests.at(-1)).toMatchObject({ apiKey: ownKey, content: content('byokbudget', 2) });
    // ai.streamText prepares its call the same way (drained to one result on /rpc).
    const streamed = await rpcCall(s.url, user, 'ai.streamText', ask('byokbudget', 3));
    if (!streamed.result) throw new Error(streamed.text);
    expect(upstream.requests.at(-1)).toMatchObject({ apiKey: ownKey, content: content('byokbudget', 3) });

    // Neither the platform balance nor the budget's spend moved; both calls are in the history as BYOK.
    expect((await rpcCall(s.url, user, 'billing.getTokenBalance')).result.virtualTokenBalance).toBe(balance);
    const budget = (await rpcCall(s.url, user, 'billing.getBudget')).result;
    expect(budget.periods[0]).toMatchObject({ spent: { tokens: WORST }, reserved: { tokens: 0 } });
    const history = (await rpcCall(s.url, user, 'billing.getUsageHistory', { limit: 10 })).result.usage as Array<{ mode: string }>;
    expect(history.map((u) => u.mode)).toEqual(['byok', 'byok', 'byok', 'platform']);

    const mine = () => hook.got.filter((g) => g.json.data.userId === sub);
    await waitFor(() => mine().filter((g) => g.event === 'fallbackToByok').length >= 3, { what: 'three fallbackToByok alerts' });
    await sleep(200); // a deliberate pause: time for any extra alert to arrive (asserting none does)
    const fallbacks = mine().filter((g) => g.event === 'fallbackToByok');
    expect(fallbacks).toHaveLength(3);
    for (const f of fallbacks)
      expect(f.json.data).toMatchObject({ userId: sub, provider: 'openai', estimatedTokens: WORST, reason: 'budget' });
    // The platform budget was exceeded: its alert, once for the period.
    expect(mine().filter((g) => g.event === 'budgetExceeded')).toHaveLength(1);
  });

  it('is refused as before without a usable stored key: none stored, BYOK off, or byok left out of the order', async () => {
    const refusedCall = async (sub: string, setup: (user: string) => Promise<void>) => {
      const user = await tokenFor(sub);
      await trpcClient(s.url, admin).admin.setBudget.mutate({ userId: sub, period: 'daily', tokens: Math.floor(WORST / 2) });
      await creditTokens(s.url, admin, sub, 1_000_000, `byok-${sub}`);
      await setup(user);
      const sent = upstream.requests.length;
      const plan = (await rpcCall(s.url, user, 'billing.planConsumption', { estimatedTokens: WORST, provider: 'openai' })).result;
      expect(plan).toMatchObject({ payer: 'none', viable: false, platformRefusedBy: 'budget' });
      const r = await rpcCall(s.url, user, 'ai.generateText', ask(sub, 0));
      expect(r.error!.data).toMatchObject({ code: 'PAYMENT_REQUIRED', details: { reason: 'budget_exceeded', metric: 'tokens' } });
      expect(r.error!.data!.details).toEqual(plan.budget);
      expect(upstream.requests.length).toBe(sent);
    };
    await refusedCall('byok-none-stored', async (user) => {
      await trpcClient(s.url, user).user.updateUserPreferences.mutate({ byokEnabled: true });
    });
    await refusedCall('byok-switched-off', async (user) => {
      await trpcClient(s.url, user).user.configureBYOK.mutate({
        providers: { openai: { enabled: true, apiKey: 'sk-switched-off-0001' } },
        enabled: false,
      });
    });
    await refusedCall('byok-not-in-order', async (user) => {
      await trpcClient(s.url, user).user.configureBYOK.mutate({ providers: { openai: { enabled: true, apiKey: 'sk-not-in-order-0001' } } });
      await trpcClient(s.url, user).user.updateUserPreferences.mutate({ consumptionOrder: ['subscription', 'one_time'] });
    });
  });
});
