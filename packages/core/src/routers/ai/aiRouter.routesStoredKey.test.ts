import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, windowClock, type TestUpstream } from '@ai-backend/test-utils';
import { alice, bob, createAiHarness, SERVER_KEY, USER_KEY, type AiHarness } from './__tests__/aiHarness.js';

/**
 * Route calls a signed-in caller's stored key pays (docs/ai.md#routes): planned for the caller's
 * keys on every kind of call (streamed, embeddings), a target of the provider billing decided
 * for kept among those tried, and a call let past the route's refusal whose hold chooses the
 * platform after all served by its fallback. Each deployment a named provider with a test
 * upstream of its own.
 */
const ONE = 'm-one';
const TWO = 'm-two';
const E_ONE = 'e-one';
const E_TWO = 'e-two';
const PRICE = { inputUsdPerMTok: 1, outputUsdPerMTok: 2 };
const EMBED_PRICE = { kind: 'embedding', inputUsdPerMTok: 1 };

let upstreams: TestUpstream[] = [];
let h: AiHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await Promise.all(upstreams.map((u) => u.close()));
  upstreams = [];
});

/**
 * Deployments dep-a and dep-b (callers may bring their own key for both) and dep-p (the
 * platform's only), `routes` over them, on a clock that starts a minute.
 */
async function harness(routes: Record<string, unknown>, fallbacks: string[] = []) {
  const ups: Record<string, TestUpstream> = {};
  const providers: Record<string, unknown> = {};
  for (const id of ['dep-a', 'dep-b', 'dep-p']) {
    const up = await createTestUpstream({ outputTokens: 16 });
    upstreams.push(up);
    ups[id] = up;
    const models = { [ONE]: PRICE, [TWO]: PRICE, [E_ONE]: EMBED_PRICE, [E_TWO]: EMBED_PRICE };
    providers[id] = { type: 'openai-compatible', baseUrl: up.namedBaseUrl(id), apiKey: SERVER_KEY, byok: id !== 'dep-p', models };
  }
  const clock = windowClock();
  h = await createAiHarness(
    {
      serverProviders: ['anthropic', 'openai', 'google', 'openrouter', 'dep-a', 'dep-b', 'dep-p'],
      ai: {
        providers: providers as never,
        routes: routes as never,
        fallbacks,
        retry: { backoffMs: 1, maxBackoffMs: 2 },
        circuitBreaker: { failureThreshold: 1000 },
      },
    },
    {},
    { clock: clock.now },
  );
  for (const who of [alice, bob]) await h.credit(who.sub, 100_000_000);
  return { ups, h };
}

/** Alice spends her stored keys (for `providers`) first; bob spends tokens. */
async function aliceStores(providers: string[]): Promise<void> {
  for (const p of providers) await h!.runtime.vault.store(alice.sub, p, USER_KEY);
  await h!.runtime.billing.preferences.update(alice.sub, { byokEnabled: true, consumptionOrder: ['byok', 'subscription', 'one_time'] });
}

const calls = (up: TestUpstream) => up.requests.filter((r) => r.format !== 'models');
const ask = (model: string, who = bob) =>
  h!.caller(who).ai.generateText({ content: 'hi', systemPrompt: 's', model, options: { maxTokens: 20 } });

describe('route calls a stored key pays', () => {
  it('a stream the route accepts and the stored key pays is planned for that key: past an rpm the platform used up', async () => {
    const { ups } = await harness({
      solo: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${ONE}`, rpm: 1, priority: 0 },
          { model: `dep-a/${TWO}`, priority: 1 },
        ],
      },
    });
    await aliceStores(['dep-a']);
    expect((await ask('solo')).data.model).toBe(ONE);
    expect((await ask('solo')).data.model).toBe(TWO);
    const before = await h!.balance(alice.sub);
    const events = [];
    for await (const e of await h!
      .caller(alice)
      .ai.streamText({ content: 'stream it', systemPrompt: 's', model: 'solo', options: { maxTokens: 20 } }))
      events.push(e as { type: string; model?: string; result?: { usageInfo?: unknown; tokenUsage?: unknown } });
    expect(events[0]).toMatchObject({ type: 'start', provider: 'dep-a', model: ONE });
    expect(events.at(-1)).toMatchObject({ type: 'finish', result: { usageInfo: expect.any(Object) } });
    expect(calls(ups['dep-a']!).at(-1)).toMatchObject({ model: ONE, apiKey: USER_KEY });
    expect(await h!.balance(alice.sub)).toBe(before);
  });

  it('an embedding call the route accepts and the stored key pays is planned for that key', async () => {
    const { ups } = await harness({
      vectors: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${E_ONE}`, rpm: 1, priority: 0 },
          { model: `dep-a/${E_TWO}`, priority: 1 },
        ],
      },
    });
    await aliceStores(['dep-a']);
    const embed = (who = bob) => h!.caller(who).ai.embed({ model: 'vectors', input: ['one text'] });
    expect((await embed()).data.model).toBe(E_ONE);
    expect((await embed()).data.model).toBe(E_TWO);
    const r = await embed(alice);
    expect(r.data).toMatchObject({ provider: 'dep-a', model: E_ONE });
    expect(r.usageInfo).toBeDefined();
    expect(calls(ups['dep-a']!).at(-1)).toMatchObject({ model: E_ONE, apiKey: USER_KEY });
  });

  it('with retries 0, a target of the provider billing decided for is the one tried (not one the caller has no key for)', async () => {
    const { ups } = await harness({
      pair: {
        strategy: 'priority',
        retries: 0,
        targets: [
          { model: `dep-a/${ONE}`, priority: 0 },
          { model: `dep-b/${ONE}`, priority: 1 },
        ],
        cooldownSec: 60,
      },
    });
    await aliceStores(['dep-b']);
    // A 429 to the server's key cools dep-a for the platform: its plan is dep-b, the hold is for dep-b.
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 60 });
    await expect(ask('pair')).rejects.toMatchObject({ cause: { details: { reason: 'rate_limited' } } });
    ups['dep-a']!.failProvider('dep-a', undefined);
    expect((await ask('pair')).data.provider).toBe('dep-b');
    // Alice's keys' plan prefers dep-a, for which she stored no key: her dep-b key serves.
    const r = await ask('pair', alice);
    expect(r.data).toMatchObject({ provider: 'dep-b', model: ONE });
    expect(calls(ups['dep-b']!).at(-1)).toMatchObject({ apiKey: USER_KEY });
    expect(calls(ups['dep-a']!)).toHaveLength(1);
  });

  it("a caller's key is planned only onto targets that accept one: a request key and a stored key past a platform-only deployment the strategy prefers", async () => {
    const { ups } = await harness({
      mixed: {
        strategy: 'priority',
        targets: [
          { model: `dep-p/${ONE}`, rpm: 1, priority: 0 },
          { model: `dep-a/${ONE}`, rpm: 1, priority: 1 },
        ],
      },
    });
    const own = await h!.caller(bob).ai.generateText({ content: 'own', systemPrompt: 's', model: 'mixed', apiKey: USER_KEY });
    expect(own.data.provider).toBe('dep-a');
    expect(calls(ups['dep-a']!).at(-1)).toMatchObject({ apiKey: USER_KEY });
    // The platform uses up both rpms: the route refuses it; alice's stored key for dep-a serves her.
    expect((await ask('mixed')).data.provider).toBe('dep-p');
    expect((await ask('mixed')).data.provider).toBe('dep-a');
    await expect(ask('mixed')).rejects.toMatchObject({ cause: { details: { reason: 'route_at_capacity' } } });
    await aliceStores(['dep-a']);
    const stored = await ask('mixed', alice);
    expect(stored.data.provider).toBe('dep-a');
    expect(stored.usageInfo).toBeDefined();
    expect(calls(ups['dep-a']!).at(-1)).toMatchObject({ apiKey: USER_KEY });
    expect(calls(ups['dep-p']!).every((r) => r.apiKey === SERVER_KEY)).toBe(true);
  });

  it("through an API key with a concurrency limit (billing's two-step decision), a stored key for another deployment than the plan's first pays there", async () => {
    const { ups } = await harness({
      split: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${ONE}`, priority: 0 },
          { model: `dep-b/${ONE}`, priority: 1 },
        ],
      },
    });
    await aliceStores(['dep-b']);
    const { key } = await h!.runtime.keys.create({ identity: alice, asAdmin: false }, alice.sub, {
      name: 'limited',
      limits: { concurrent: 2 },
    });
    const auth = await h!.runtime.keys.authenticate(key);
    if (!auth.ok) throw auth.error;
    expect(auth.identity.apiKey?.concurrent).toBe(2);
    const before = await h!.balance(alice.sub);
    const r = await ask('split', auth.identity);
    expect(r.data).toMatchObject({ provider: 'dep-b', model: ONE });
    expect(r.usageInfo).toBeDefined();
    expect(calls(ups['dep-b']!).at(-1)).toMatchObject({ apiKey: USER_KEY });
    expect(calls(ups['dep-a']!)).toHaveLength(0);
    expect(await h!.balance(alice.sub)).toBe(before);
  });

  it('a route that refuses the platform serves a caller whose one stored key is for its second deployment, there', async () => {
    const { ups } = await harness({
      full: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${ONE}`, rpm: 1, priority: 0 },
          { model: `dep-b/${ONE}`, rpm: 1, priority: 1 },
        ],
      },
    });
    expect((await ask('full')).data.provider).toBe('dep-a');
    expect((await ask('full')).data.provider).toBe('dep-b');
    await expect(ask('full')).rejects.toMatchObject({ cause: { details: { reason: 'route_at_capacity' } } });
    await aliceStores(['dep-b']);
    const before = await h!.balance(alice.sub);
    const r = await ask('full', alice);
    expect(r.data).toMatchObject({ provider: 'dep-b', model: ONE });
    expect(r.usageInfo).toBeDefined();
    expect(calls(ups['dep-b']!).at(-1)).toMatchObject({ apiKey: USER_KEY });
    expect(calls(ups['dep-a']!).every((c) => c.apiKey === SERVER_KEY)).toBe(true);
    expect(await h!.balance(alice.sub)).toBe(before);
    // ... and the platform is still refused.
    await expect(ask('full')).rejects.toMatchObject({ cause: { details: { reason: 'route_at_capacity' } } });
  });

  it("a call with fallbacks let past the route's refusal whose hold chooses the platform after all is served by its fallback, held once", async () => {
    await harness({ spill: { targets: [{ model: 'dep-a/m-one', rpm: 1 }] } }, ['google']);
    await ask('spill');
    const billing = h!.runtime.billing;
    // The question says the stored key pays, the hold (no key stored) chooses the platform: as
    // when the caller's preferences or key change in between.
    billing.storedKeyWouldPay = async () => true;
    const decide = billing.decideAndReserve.bind(billing);
    const decided: Array<{ provider: string; platformAllowed: boolean; held: boolean }> = [];
    billing.decideAndReserve = async (p) => {
      const d = await decide(p);
      decided.push({ provider: p.provider, platformAllowed: p.platformAllowed, held: 'reservation' in d && d.reservation !== undefined });
      return d;
    };
    const before = await h!.balance(bob.sub);
    const r = await ask('spill');
    expect(r.data.provider).toBe('google');
    expect(decided).toEqual([
      { provider: 'dep-a', platformAllowed: false, held: false },
      { provider: 'google', platformAllowed: true, held: true },
    ]);
    expect(await h!.balance(bob.sub)).toBe(before - r.tokenUsage!.tokensCharged);
  });
});
