import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, windowClock, type TestUpstream, type TestUpstreamOptions } from '@ai-backend/test-utils';
import type { ConfigInput } from '../../config/schema.js';
import type { Identity } from '../../kernel/identity.js';
import { alice, createAiHarness, keyWith, SERVER_KEY, type AiHarness } from './__tests__/aiHarness.js';

/**
 * Routes over deployments, each deployment a named provider with a test upstream of its own, so
 * every deployment's calls are counted where they arrive.
 */
const MODEL = 'deploy-model';
const PRICE = { inputUsdPerMTok: 1, outputUsdPerMTok: 2 };

let upstreams: TestUpstream[] = [];
let h: AiHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await Promise.all(upstreams.map((u) => u.close()));
  upstreams = [];
});

/** `ids.length` deployments, each a named openai-compatible provider on its own upstream. */
async function deployments(
  ids: string[],
  options: TestUpstreamOptions[] = [],
): Promise<{ ups: Record<string, TestUpstream>; providers: Record<string, unknown> }> {
  const ups: Record<string, TestUpstream> = {};
  const providers: Record<string, unknown> = {};
  for (const [i, id] of ids.entries()) {
    const up = await createTestUpstream(options[i] ?? {});
    upstreams.push(up);
    ups[id] = up;
    providers[id] = { type: 'openai-compatible', baseUrl: up.namedBaseUrl(id), apiKey: SERVER_KEY, models: { [MODEL]: PRICE } };
  }
  return { ups, providers };
}

async function harness(
  providers: Record<string, unknown>,
  routes: Record<string, unknown>,
  over: ConfigInput = {},
  clock?: () => number,
): Promise<AiHarness> {
  const { ai, ...rest } = over;
  h = await createAiHarness(
    {
      serverProviders: ['anthropic', 'openai', 'google', 'openrouter', ...Object.keys(providers)],
      ai: {
        providers: providers as never,
        routes: routes as never,
        retry: { backoffMs: 1, maxBackoffMs: 2 },
        circuitBreaker: { failureThreshold: 1000 },
        ...ai,
      },
      ...rest,
    },
    {},
    clock ? { clock } : {},
  );
  await h.credit(alice.sub, 100_000_000);
  return h;
}

/** What a refused call throws (a TRPCError with our CoreError as its cause). */
type Failure = { code: string; message: string; cause?: { headers?: Record<string, string>; details?: Record<string, unknown> } };
const failure = (p: Promise<unknown>): Promise<Failure> =>
  p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e as Failure,
  );

const ask = (who: Identity, model: string, content = 'hi') =>
  h!.caller(who).ai.generateText({ content, systemPrompt: 's', model, options: { maxTokens: 20 } });

/** Run `total` calls with `concurrency` callers. */
async function run(total: number, concurrency: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await call(next++);
    }),
  );
}

describe('routes: strategies over deployments', () => {
  it('weighted 3:1 splits 400 calls within ±10 points of 75 %', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(providers, {
      fast: {
        targets: [
          { model: `dep-a/${MODEL}`, weight: 3 },
          { model: `dep-b/${MODEL}`, weight: 1 },
        ],
      },
    });
    await run(400, 8, () => ask(alice, 'fast'));
    const a = ups['dep-a']!.requests.length;
    const b = ups['dep-b']!.requests.length;
    expect(a + b).toBe(400);
    expect(a / 400).toBeGreaterThan(0.65);
    expect(a / 400).toBeLessThan(0.85);
  });

  it("least-busy sends ≥ 80 % of 16 concurrent callers' calls to a 5 ms deployment over a 300 ms one", async () => {
    // On an idle machine the whole run takes less than one slow answer (160 calls of 5 ms over 16
    // callers). A loaded machine stretches the fast path and the run, not the 300 ms, so the slow
    // deployment is also held until no caller is left to call anything else (each caller done or
    // waiting on it): as slow as it is on an idle machine, however slow this one is.
    const CALLERS = 16;
    let done = 0;
    const held: Array<() => void> = [];
    const releaseWhenStuck = () => {
      if (done + held.length < CALLERS) return;
      for (const release of held.splice(0)) release();
    };
    const slowGate = () =>
      new Promise<void>((resolve) => {
        held.push(resolve);
        releaseWhenStuck();
      });
    const { ups, providers } = await deployments(['dep-fast', 'dep-slow'], [{ latencyMs: 5 }, { latencyMs: 300, gate: slowGate }]);
    await harness(providers, {
      busy: { strategy: 'least-busy', targets: [{ model: `dep-fast/${MODEL}` }, { model: `dep-slow/${MODEL}` }] },
    });
    // 16 callers, each arriving 10 ms after the previous one and calling ten times in a row.
    await Promise.all(
      Array.from({ length: CALLERS }, async (_, c) => {
        await new Promise((r) => setTimeout(r, c * 10));
        try {
          for (let i = 0; i < 10; i++) await ask(alice, 'busy');
        } finally {
          done++;
          releaseWhenStuck();
        }
      }),
    );
    const fast = ups['dep-fast']!.requests.length;
    const slow = ups['dep-slow']!.requests.length;
    expect(fast + slow).toBe(160);
    expect(fast / 160).toBeGreaterThanOrEqual(0.8);
  });

  it('latency prefers the deployment that answers sooner once both are measured', async () => {
    // 250 ms against 2: a loaded machine's stall of a fast answer (GC, scheduling) moves its
    // average above the slow one's only when it lasts longer than the slow answer itself.
    const { ups, providers } = await deployments(['dep-fast', 'dep-slow'], [{ latencyMs: 2 }, { latencyMs: 250 }]);
    await harness(providers, { quick: { strategy: 'latency', targets: [{ model: `dep-fast/${MODEL}` }, { model: `dep-slow/${MODEL}` }] } });
    await run(60, 1, () => ask(alice, 'quick'));
    // Both were tried (never-measured targets first, and exploration), the fast one took most.
    expect(ups['dep-slow']!.requests.length).toBeGreaterThanOrEqual(1);
    expect(ups['dep-fast']!.requests.length).toBeGreaterThanOrEqual(45);
  });

  it('priority uses the first group while it has capacity (its rpm), then the next; all full → 429 with Retry-After', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    // The counts are per minute: a clock that starts one, so the calls share it.
    const clock = windowClock();
    await harness(
      providers,
      {
        tiered: {
          strategy: 'priority',
          targets: [
            { model: `dep-a/${MODEL}`, priority: 0, rpm: 3 },
            { model: `dep-b/${MODEL}`, priority: 1, rpm: 2 },
          ],
        },
      },
      {},
      clock.now,
    );
    const served: string[] = [];
    for (let i = 0; i < 5; i++) served.push((await ask(alice, 'tiered')).data.provider);
    expect(served).toEqual(['dep-a', 'dep-a', 'dep-a', 'dep-b', 'dep-b']);
    const err = await failure(ask(alice, 'tiered'));
    expect(err).toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    // The minute started with the injected clock, so the counts start over almost a minute later.
    expect(Number(err.cause?.headers?.['Retry-After'])).toBeGreaterThan(55);
    expect(err.cause?.details).toMatchObject({ reason: 'route_at_capacity' });
    expect(ups['dep-a']!.requests.length + ups['dep-b']!.requests.length).toBe(5);
  });

  it("usage spreads calls by the share of each target's rpm used this minute", async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    const clock = windowClock();
    await harness(
      providers,
      {
        shared: {
          strategy: 'usage',
          targets: [
            { model: `dep-a/${MODEL}`, rpm: 100 },
            { model: `dep-b/${MODEL}`, rpm: 300 },
          ],
        },
      },
      {},
      clock.now,
    );
    await run(40, 1, () => ask(alice, 'shared'));
    // Equal shares: b (3x the rpm) takes about three calls for each of a's.
    expect(ups['dep-b']!.requests.length).toBeGreaterThanOrEqual(28);
    expect(ups['dep-a']!.requests.length).toBeGreaterThanOrEqual(8);
  });
});

describe('routes: cooldowns, retries and charging', () => {
  it('a deployment answering 429 with Retry-After is cooled down: the call is retried on another target, charged once for it, the next calls skip it', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(providers, {
      fast: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${MODEL}`, priority: 0 },
          { model: `dep-b/${MODEL}`, priority: 1 },
        ],
      },
    });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 30 });
    const before = await h!.balance(alice.sub);
    const first = await ask(alice, 'fast');
    expect(first.data).toMatchObject({ provider: 'dep-b', attempts: [{ provider: 'dep-a', reason: 'rate_limited' }] });
    expect(await h!.balance(alice.sub)).toBe(before - first.tokenUsage!.tokensCharged);
    for (let i = 0; i < 10; i++) expect((await ask(alice, 'fast')).data.provider).toBe('dep-b');
    expect(ups['dep-a']!.requests.filter((r) => r.format !== 'models')).toHaveLength(1);
    const report = await h!.runtime.ai.routes();
    expect(report[0]!.targets[0]).toMatchObject({ model: `dep-a/${MODEL}`, errors: 1 });
    expect(report[0]!.targets[0]!.coolingDownUntil).not.toBeNull();
    expect(report[0]!.targets[1]).toMatchObject({ calls: 11, errors: 0, coolingDownUntil: null });
  });

  it('every target cooling down and no fallback: 503 with Retry-After; with a fallback, the fallback serves', async () => {
    const { ups, providers } = await deployments(['dep-a']);
    await harness(providers, { solo: { targets: [{ model: `dep-a/${MODEL}` }], cooldownSec: 60 } });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 500 });
    await expect(ask(alice, 'solo')).rejects.toMatchObject({ cause: { details: { reason: 'upstream_5xx' } } });
    const err = await failure(ask(alice, 'solo'));
    expect(err).toMatchObject({ code: 'SERVICE_UNAVAILABLE', cause: { details: { reason: 'route_unavailable' } } });
    expect(Number(err.cause?.headers?.['Retry-After'])).toBeGreaterThan(50);
    const viaFallback = await h!
      .caller(alice)
      .ai.generateText({ content: 'hi', systemPrompt: 's', model: 'solo', fallbacks: ['openai/gpt-4.1-nano'], options: { maxTokens: 20 } });
    expect(viaFallback.data).toMatchObject({ provider: 'openai', model: 'gpt-4.1-nano' });
    expect(ups['dep-a']!.requests).toHaveLength(1);
  });

  it('every target cooling after its 429 is a 429 (route_at_capacity) with Retry-After, as the first call was', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(providers, {
      both: {
        strategy: 'priority',
        targets: [
          { model: `dep-b/${MODEL}`, priority: 0 },
          { model: `dep-a/${MODEL}`, priority: 1 },
        ],
        cooldownSec: 5,
      },
    });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 40 });
    ups['dep-b']!.failProvider('dep-b', { kind: 'status', status: 429, retryAfter: 20 });
    const first = await failure(ask(alice, 'both'));
    expect(first).toMatchObject({ code: 'TOO_MANY_REQUESTS', cause: { details: { reason: 'rate_limited', retryAfterSeconds: 20 } } });
    // dep-b (tried first) takes calls again in 20 s, though dep-a (tried last) said 40.
    expect(first.cause?.headers?.['Retry-After']).toBe('20');
    const next = await failure(ask(alice, 'both'));
    expect(next).toMatchObject({ code: 'TOO_MANY_REQUESTS', cause: { details: { reason: 'route_at_capacity', route: 'both' } } });
    // The first target back: dep-b's 20 s.
    expect(Number(next.cause?.headers?.['Retry-After'])).toBeGreaterThan(15);
    expect(Number(next.cause?.headers?.['Retry-After'])).toBeLessThanOrEqual(20);
    expect(ups['dep-a']!.requests.length + ups['dep-b']!.requests.length).toBe(2);
  });

  it("a target admitted and then skipped for its open circuit gives its request back: it does not use up the target's rpm", async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    const clock = windowClock();
    await harness(
      providers,
      {
        tiered: {
          strategy: 'priority',
          // No cooldown: the circuit breaker alone keeps the failing deployment out.
          cooldownSec: 0,
          targets: [
            { model: `dep-a/${MODEL}`, priority: 0, rpm: 3 },
            { model: `dep-b/${MODEL}`, priority: 1 },
          ],
        },
      },
      { ai: { circuitBreaker: { failureThreshold: 1, cooldownMs: 60_000, windowMs: 60_000 } } },
      clock.now,
    );
    ups['dep-a']!.failNext({ kind: 'status', status: 500 });
    for (let i = 0; i < 6; i++) expect((await ask(alice, 'tiered')).data.provider).toBe('dep-b');
    // One request reached dep-a (the failed one); the five calls its open circuit skipped used none of its rpm.
    expect(ups['dep-a']!.requests.filter((r) => r.format !== 'models')).toHaveLength(1);
    const [report] = await h!.runtime.ai.routes();
    expect(report!.targets[0]).toMatchObject({ rpmUsed: 1, rpmHeadroom: 2, rateLimited: 0 });
  });

  it('every target cooling, one of them down (5xx): 503 route_unavailable', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(providers, {
      both: { targets: [{ model: `dep-a/${MODEL}` }, { model: `dep-b/${MODEL}` }], cooldownSec: 30 },
    });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 40 });
    ups['dep-b']!.failProvider('dep-b', { kind: 'status', status: 503 });
    await failure(ask(alice, 'both'));
    const next = await failure(ask(alice, 'both'));
    expect(next).toMatchObject({ code: 'SERVICE_UNAVAILABLE', cause: { details: { reason: 'route_unavailable' } } });
  });

  it("a caller's own key that is rate limited cools no deployment and opens no breaker: platform-paid calls of the route go on", async () => {
    // Two models of one built-in provider, which callers may also use with their own key.
    await harness(
      {},
      { fast: { targets: [{ model: 'openai/gpt-4.1-nano' }, { model: 'openai/gpt-4.1-mini' }], cooldownSec: 30 } },
      { ai: { circuitBreaker: { failureThreshold: 2, cooldownMs: 30_000, windowMs: 60_000 } } },
    );
    // An anonymous caller with its own throttled key (the upstream answers it 429 with an hour's Retry-After), several times.
    for (let i = 0; i < 4; i++)
      await expect(
        h!.caller(null).ai.generateText({
          content: `own key ${i} [[upstream:429:retry=3600]]`,
          systemPrompt: 's',
          model: 'fast',
          apiKey: 'sk-callers-own-throttled-key',
          options: { maxTokens: 20 },
        }),
      ).rejects.toMatchObject({ cause: { details: { reason: 'rate_limited' } } });
    // Its key's limit is not the deployments': nothing cools, the breaker stays closed.
    expect(await h!.runtime.shared.keys('airt:cool:')).toEqual([]);
    expect(await h!.runtime.storage.keys('aicb:openai:')).toEqual([]);
    const platform = await ask(alice, 'fast');
    expect(platform.data.provider).toBe('openai');
    expect(platform.data.attempts).toBeUndefined();
    // The server's key failing still cools its deployment (the rule above is for callers' keys only).
    h!.upstream.failNext({ kind: 'status', status: 429, retryAfter: 30 });
    const retried = await ask(alice, 'fast', 'again');
    expect(retried.data.attempts).toEqual([expect.objectContaining({ reason: 'rate_limited' })]);
    expect(await h!.runtime.shared.keys('airt:cool:')).toHaveLength(1);
  });

  it("a deployment whose server key the provider refuses (401/403) is the deployment's failure: the call moves on to another target, charged once; a caller's own refused key is not retried", async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    // Deployments that also take callers' own keys.
    for (const p of Object.values(providers)) (p as { byok?: boolean }).byok = true;
    await harness(providers, {
      fast: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${MODEL}`, priority: 0 },
          { model: `dep-b/${MODEL}`, priority: 1 },
        ],
      },
    });
    for (const status of [401, 403]) {
      ups['dep-a']!.failProvider('dep-a', { kind: 'status', status });
      const before = await h!.balance(alice.sub);
      const served = await ask(alice, 'fast', `key ${status}`);
      expect(served.data).toMatchObject({ provider: 'dep-b', attempts: [{ provider: 'dep-a', reason: 'invalid_key' }] });
      expect(await h!.balance(alice.sub)).toBe(before - served.tokenUsage!.tokensCharged);
    }
    // The caller's own key, refused: its answer is the refusal, and no other deployment is asked with it.
    const toB = ups['dep-b']!.requests.length;
    await expect(
      h!.caller(alice).ai.generateText({
        content: 'own',
        systemPrompt: 's',
        model: 'fast',
        apiKey: 'sk-callers-own-revoked',
        options: { maxTokens: 20 },
      }),
    ).rejects.toMatchObject({ cause: { details: { reason: 'invalid_key' } } });
    expect(ups['dep-b']!.requests.length).toBe(toB);
  });

  it("calls with a caller's own key use none of a deployment's rpm: platform-paid calls still get the route's capacity", async () => {
    const clock = windowClock();
    await harness(
      {},
      {
        fast: {
          strategy: 'priority',
          targets: [
            { model: 'openai/gpt-4.1-nano', priority: 0, rpm: 2 },
            { model: 'openai/gpt-4.1-mini', priority: 1, rpm: 2 },
          ],
        },
      },
      {},
      clock.now,
    );
    // An anonymous caller with its own key: its calls go out with that key, not the deployments'.
    for (let i = 0; i < 4; i++)
      await h!.caller(null).ai.generateText({
        content: `own key ${i}`,
        systemPrompt: 's',
        model: 'fast',
        apiKey: 'sk-callers-own-key',
        options: { maxTokens: 20 },
      });
    expect(h!.upstream.requests.map((r) => r.apiKey)).toEqual(Array(4).fill('sk-callers-own-key'));
    // The deployments' own rpm this minute is untouched: four platform-paid calls are served.
    const served: string[] = [];
    for (let i = 0; i < 4; i++) served.push((await ask(alice, 'fast', `platform ${i}`)).data.model);
    expect(served).toEqual(['gpt-4.1-nano', 'gpt-4.1-nano', 'gpt-4.1-mini', 'gpt-4.1-mini']);
    await expect(ask(alice, 'fast', 'one more')).rejects.toMatchObject({ cause: { details: { reason: 'route_at_capacity' } } });
  });

  it("a call its route refused goes on for a stored key only if the hold pays with it: the platform chosen after all → the route's 429, nothing held", async () => {
    const clock = windowClock();
    await harness({}, { fast: { targets: [{ model: 'openai/gpt-4.1-nano', rpm: 1 }] } }, {}, clock.now);
    await ask(alice, 'fast', 'uses the rpm');
    const billing = h!.runtime.billing;
    // The question says the stored key pays, the hold (no key stored) chooses the platform: as
    // when the caller's preferences or key change in between.
    billing.storedKeyWouldPay = async () => true;
    const decide = billing.decideAndReserve.bind(billing);
    const decided: Array<{ platformAllowed: boolean; held: boolean }> = [];
    billing.decideAndReserve = async (p) => {
      const d = await decide(p);
      decided.push({ platformAllowed: p.platformAllowed, held: 'reservation' in d && d.reservation !== undefined });
      return d;
    };
    const before = await h!.balance(alice.sub);
    const err = await failure(ask(alice, 'fast', 'refused'));
    expect(err).toMatchObject({ code: 'TOO_MANY_REQUESTS', cause: { details: { reason: 'route_at_capacity' } } });
    expect(decided).toEqual([{ platformAllowed: false, held: false }]);
    expect(h!.upstream.requests.length).toBe(1);
    expect(await h!.balance(alice.sub)).toBe(before);
  });

  it('retries stop after `retries` other targets', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b', 'dep-c']);
    await harness(providers, {
      r1: {
        strategy: 'priority',
        retries: 1,
        targets: [
          { model: `dep-a/${MODEL}`, priority: 0 },
          { model: `dep-b/${MODEL}`, priority: 1 },
          { model: `dep-c/${MODEL}`, priority: 2 },
        ],
      },
    });
    for (const id of ['dep-a', 'dep-b']) ups[id]!.failProvider(id, { kind: 'status', status: 503 });
    const err = await failure(ask(alice, 'r1'));
    expect(err.cause?.details?.attempts).toHaveLength(2);
    expect(ups['dep-c']!.requests).toHaveLength(0);
  });

  it('a stream fails over before its first token, and is charged once for the target that answered', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(providers, {
      s: {
        strategy: 'priority',
        targets: [
          { model: `dep-a/${MODEL}`, priority: 0 },
          { model: `dep-b/${MODEL}`, priority: 1 },
        ],
      },
    });
    ups['dep-a']!.failProvider('dep-a', { kind: 'status', status: 502 });
    const before = await h!.balance(alice.sub);
    const stream = await h!
      .caller(alice)
      .ai.streamText({ content: 'stream it', systemPrompt: 's', model: 's', options: { maxTokens: 20 } });
    const events: Array<{ type: string; provider?: string; result?: { tokenUsage?: { tokensCharged: number } } }> = [];
    for await (const e of stream) events.push(e as never);
    expect(events[0]).toMatchObject({ type: 'start', provider: 'dep-b' });
    const charged = events.at(-1)!.result!.tokenUsage!.tokensCharged;
    expect(await h!.balance(alice.sub)).toBe(before - charged);
    const settles = (await h!.runtime.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(1);
    expect(settles[0]!.usage).toMatchObject({ provider: 'dep-b' });
  });
});

describe('routes: names, key rules and money', () => {
  it('a route name works as an alias target and a fallback; an API key limited to the route uses its targets, one limited to a target only that one', async () => {
    const { ups, providers } = await deployments(['dep-a', 'dep-b']);
    await harness(
      providers,
      { fast: { targets: [{ model: `dep-a/${MODEL}` }, { model: `dep-b/${MODEL}` }] } },
      { ai: { aliases: { quick: 'fast' } } },
    );
    expect((await ask(alice, 'quick')).data.provider).toMatch(/^dep-[ab]$/);
    h!.upstream.failNext({ kind: 'status', status: 500 });
    const viaFallback = await h!
      .caller(alice)
      .ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai', fallbacks: ['fast'], options: { maxTokens: 20 } });
    expect(viaFallback.data.provider).toMatch(/^dep-[ab]$/);

    const byRoute = await keyWith(h!, alice, ['fast']);
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) seen.add((await ask(byRoute, 'fast')).data.provider);
    expect([...seen].sort()).toEqual(['dep-a', 'dep-b']);
    await expect(ask(byRoute, 'openai/gpt-4.1-nano')).rejects.toMatchObject({ cause: { details: { reason: 'key_model_not_allowed' } } });

    const byTarget = await keyWith(h!, alice, ['dep-b/*']);
    ups['dep-a']!.reset();
    for (let i = 0; i < 10; i++) expect((await ask(byTarget, 'fast')).data.provider).toBe('dep-b');
    expect(ups['dep-a']!.requests).toHaveLength(0);
    const none = await keyWith(h!, alice, ['openai/*']);
    await expect(ask(none, 'fast')).rejects.toMatchObject({ code: 'FORBIDDEN', cause: { details: { reason: 'key_model_not_allowed' } } });
  });

  it('the hold prices the dearest target a call may reach: a money limit that fits the cheap target but not the dear one refuses the call', async () => {
    const { providers } = await deployments(['dep-a', 'dep-b']);
    (providers['dep-b'] as { models: Record<string, unknown> }).models = { [MODEL]: { inputUsdPerMTok: 1000, outputUsdPerMTok: 1000 } };
    await harness(providers, {
      mixed: {
        targets: [
          { model: `dep-a/${MODEL}`, weight: 1000 },
          { model: `dep-b/${MODEL}`, weight: 0.001 },
        ],
      },
    });
    await h!.runtime.billing.budgets.set(alice.sub, 'daily', { usd: 0.01 }, 'test');
    await expect(ask(alice, 'mixed', 'x'.repeat(200))).rejects.toMatchObject({
      cause: { details: { reason: 'budget_exceeded', metric: 'usd' } },
    });
    // The cheap target alone fits the limit.
    await expect(ask(alice, `dep-a/${MODEL}`, 'x'.repeat(200))).resolves.toMatchObject({ data: { provider: 'dep-a' } });
  });
});

describe('model names that just work', () => {
  it('a bare id one configured provider serves resolves to it; one two serve is refused naming both', async () => {
    const { providers } = await deployments(['dep-a']);
    (providers['dep-a'] as { models: Record<string, unknown> }).models = { [MODEL]: PRICE, 'gpt-4.1-nano': PRICE };
    await harness(providers, {});
    expect((await ask(alice, 'claude-sonnet-4-5')).data).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    expect((await ask(alice, MODEL)).data).toMatchObject({ provider: 'dep-a', model: MODEL });
    const err = await failure(ask(alice, 'gpt-4.1-nano'));
    expect(err.message).toContain('openai/gpt-4.1-nano');
    expect(err.message).toContain('dep-a/gpt-4.1-nano');
    expect(err.cause?.details).toMatchObject({ reason: 'ambiguous_model', candidates: ['openai/gpt-4.1-nano', 'dep-a/gpt-4.1-nano'] });
    await expect(ask(alice, 'no-such-model-anywhere')).rejects.toMatchObject({ cause: { details: { reason: 'unknown_model' } } });
  });
});
