import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadAiSdk, loadProviderSdk } from '../../services/ai/aiSdk.js';
import { PROVIDER_IDS, type BuiltinProviderId as ProviderId } from '../../config/sections/ai.js';
import { createTestUpstream, waitFor, type TestUpstream, type UpstreamFault } from '@ai-backend/test-utils';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { alice, createAiHarness, rejection, type AiHarness } from './__tests__/aiHarness.js';
import type { StreamEvent } from '../../services/ai/runStreamText.js';

const redis = await testRedis();

// Loading the AI SDK takes seconds on a busy machine: keep it out of the short timeouts below.
beforeAll(
  () => Promise.all([loadAiSdk(), ...(['openai', 'anthropic', 'google', 'openrouter'] as const).map((p) => loadProviderSdk(p))]),
  60_000,
);

const harnesses: AiHarness[] = [];
let upstream: TestUpstream | undefined;
let prefix: string | undefined;
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  await upstream?.close();
  upstream = undefined;
  if (prefix) await dropTestKeys(redis, prefix);
  prefix = undefined;
});

const NEXT: Record<ProviderId, ProviderId> = { anthropic: 'openai', openai: 'google', google: 'openrouter', openrouter: 'anthropic' };
const fast = { retry: { backoffMs: 5, maxBackoffMs: 20 } };

async function harness(over: Record<string, unknown> = {}, shared: { upstream?: TestUpstream; storage?: RedisStorage } = {}) {
  const h = await createAiHarness({ ai: { ...fast, ...over } }, {}, shared);
  harnesses.push(h);
  await h.credit(alice.sub, 100_000);
  return h;
}

describe('fallbacks: the first target fails, the next answers, only it is charged', () => {
  const faults: Array<[string, UpstreamFault, string]> = [
    ['429', { kind: 'status', status: 429 }, 'rate_limited'],
    ['500', { kind: 'status', status: 500 }, 'upstream_5xx'],
    ['stalled', { kind: 'hang' }, 'timeout'],
  ];
  for (const provider of PROVIDER_IDS) {
    for (const [name, fault, reason] of faults) {
      it(`${provider} → ${NEXT[provider]}: ${name}`, async () => {
        const h = await harness(fault.kind === 'hang' ? { timeoutMs: 500 } : {});
        h.upstream.failNext(fault);
        const r = await h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider, fallbacks: [NEXT[provider]] });
        expect(r.data.provider).toBe(NEXT[provider]);
        expect(r.data.model).toBe(h.runtime.ai.providers.defaultModel(NEXT[provider]));
        expect(r.data.attempts).toEqual([{ provider, model: h.runtime.ai.providers.defaultModel(provider), reason }]);
        expect(h.upstream.requests.map((q) => q.provider)).toEqual([provider, NEXT[provider]]);
        const entries = await h.runtime.billing.ledger.entries(alice.sub);
        const settles = entries.filter((e) => e.kind === 'settle');
        expect(settles).toHaveLength(1);
        expect(settles[0]!.usage).toMatchObject({ provider: NEXT[provider] });
        expect(await h.balance(alice.sub)).toBe(100_000 - r.tokenUsage!.tokensCharged);
        expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
      });
    }
  }

  it('config ai.fallbacks apply when the request names none; provider/model refs and aliases work', async () => {
    const h = await harness({ fallbacks: ['cheap'], aliases: { cheap: 'google/gemini-2.5-flash-lite' } });
    h.upstream.failNext({ kind: 'status', status: 503 });
    const r = await h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai' });
    expect(r.data).toMatchObject({ provider: 'google', model: 'gemini-2.5-flash-lite' });
  });

  it('a non-retryable failure (401, 400) does not fall back and costs nothing', async () => {
    const h = await harness();
    h.upstream.failNext({ kind: 'status', status: 400 });
    const err = await rejection(
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['google'] }),
    );
    expect(err.details?.reason).toBe('upstream_rejected');
    expect(h.upstream.requests).toHaveLength(1);
    expect(await h.balance(alice.sub)).toBe(100_000);
  });

  it('every target failing: the last error, with the attempts; the hold released', async () => {
    const h = await harness();
    h.upstream.failNext({ kind: 'status', status: 500 }, 2);
    const err = await rejection(
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] }),
    );
    expect(err.details?.attempts).toHaveLength(2);
    expect(await h.balance(alice.sub)).toBe(100_000);
  });
});

describe('ai.streamText fallbacks (before the first token)', () => {
  for (const provider of PROVIDER_IDS) {
    it(`${provider} → ${NEXT[provider]}: 429 before any output, the next target streams, only it is charged`, async () => {
      const h = await harness();
      h.upstream.failNext({ kind: 'status', status: 429 });
      const events = [];
      for await (const e of await h
        .caller(alice)
        .ai.streamText({ content: 'hello', systemPrompt: 's', provider, fallbacks: [NEXT[provider]] }))
        events.push(e);
      // `start` names the target that serves, with the attempts that did not.
      expect(events[0]).toMatchObject({ type: 'start', provider: NEXT[provider], attempts: [{ provider, reason: 'rate_limited' }] });
      const finish = events.at(-1)!;
      if (finish.type !== 'finish') throw new Error('no finish');
      expect(finish.result.data.provider).toBe(NEXT[provider]);
      expect(finish.result.data.attempts).toEqual([{ provider, model: expect.any(String), reason: 'rate_limited' }]);
      const settles = (await h.runtime.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle');
      expect(settles).toHaveLength(1);
      expect(settles[0]!.usage).toMatchObject({ provider: NEXT[provider] });
    });
  }

  it('a stream cut after output began does not fall back (the client already has part of an answer)', async () => {
    const h = await harness();
    const err = await rejection(
      (async () => {
        for await (const _ of await h
          .caller(alice)
          .ai.streamText({ content: 'hello [[upstream:drop]]', systemPrompt: 's', provider: 'openrouter', fallbacks: ['openai'] }))
          void _;
      })(),
    );
    expect(err.appCode).toBe('UPSTREAM_ERROR');
    expect(h.upstream.requests.map((q) => q.provider)).toEqual(['openrouter']);
  });
});

describe('circuit breaker', () => {
  /** Wait out the cooldown: the breaker's open marker (a storage key with the cooldown as TTL) is gone. */
  const cooledDown = (h: AiHarness, provider: ProviderId) =>
    waitFor(async () => (await h.runtime.storage.get(`aicb:${provider}:open`)) === undefined, {
      what: `the ${provider} breaker's cooldown`,
    });

  it('opens after the threshold (the provider is skipped), closes after a successful trial', async () => {
    const h = await harness({ circuitBreaker: { failureThreshold: 2, cooldownMs: 1000, windowMs: 10_000 } });
    const call = () =>
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] });
    h.upstream.failNext({ kind: 'status', status: 429 }, 1);
    await call();
    h.upstream.failNext({ kind: 'status', status: 429 }, 1);
    await call();
    h.upstream.reset();
    const skipped = await call();
    expect(skipped.data.provider).toBe('anthropic');
    expect(skipped.data.attempts).toEqual([{ provider: 'openai', model: expect.any(String), reason: 'circuit_open' }]);
    expect(h.upstream.requests.map((q) => q.provider)).toEqual(['anthropic']);
    await cooledDown(h, 'openai');
    h.upstream.reset();
    const trial = await call();
    expect(trial.data.provider).toBe('openai');
    expect(trial.data.attempts).toBeUndefined();
    // Closed: one failure no longer opens it (threshold 2 counts from zero again).
    h.upstream.failNext({ kind: 'status', status: 429 }, 1);
    await call();
    h.upstream.reset();
    expect((await call()).data.provider).toBe('openai');
  });

  it('failures of calls without fallbacks count too, streamed or not', async () => {
    const h = await harness({ circuitBreaker: { failureThreshold: 2, cooldownMs: 10_000, windowMs: 10_000 } });
    h.upstream.failNext({ kind: 'status', status: 500 }, 2);
    await rejection(
      (async () => {
        for await (const _ of await h.caller(alice).ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'google' })) void _;
      })(),
    );
    await rejection(h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'google' }));
    expect(await h.runtime.storage.get('aicb:google:open')).toBeDefined();
    h.upstream.failNext({ kind: 'status', status: 500 }, 2);
    await rejection(
      (async () => {
        for await (const _ of await h.caller(alice).ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'openai' })) void _;
      })(),
    );
    await rejection(
      (async () => {
        for await (const _ of await h.caller(alice).ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'openai' })) void _;
      })(),
    );
    h.upstream.reset();
    const r = await h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] });
    expect(r.data.attempts?.[0]).toMatchObject({ provider: 'openai', reason: 'circuit_open' });
  });

  it('half-open: a failed trial re-opens at once', async () => {
    // The cooldown must outlast the two calls after the trial even on a loaded machine (the
    // breaker's clock is its store's TTL, so time has to pass for real).
    const h = await harness({ circuitBreaker: { failureThreshold: 1, cooldownMs: 1500, windowMs: 10_000 } });
    const call = () =>
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'google', fallbacks: ['openrouter'] });
    h.upstream.failNext({ kind: 'status', status: 500 }, 1);
    await call();
    await cooledDown(h, 'google');
    h.upstream.failNext({ kind: 'status', status: 500 }, 1);
    await call(); // the trial fails → open again
    h.upstream.reset();
    expect((await call()).data.attempts?.[0]?.reason).toBe('circuit_open');
  });

  it('half-open: of concurrent calls (generateText and streamText) only one is the trial, the others skip the provider', async () => {
    // The cooldown must outlast the six concurrent calls and the check after them even when other
    // test files run beside this one on a loaded machine (the breaker's clock is its store's TTL).
    const h = await harness({ circuitBreaker: { failureThreshold: 1, cooldownMs: 1500, windowMs: 10_000 } });
    h.upstream.failProvider('openai', { kind: 'status', status: 500 });
    const call = () =>
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] });
    const stream = async () => {
      let start: StreamEvent | undefined;
      for await (const e of await h
        .caller(alice)
        .ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] }))
        start ??= e;
      return start as Extract<StreamEvent, { type: 'start' }>;
    };
    await call();
    await cooledDown(h, 'openai');
    h.upstream.reset();
    h.upstream.failProvider('openai', { kind: 'status', status: 500 });
    const served = await Promise.all([call(), call(), call(), stream(), stream(), stream()]);
    // One trial reached the still-failing provider; every call was served by the fallback.
    expect(h.upstream.requests.filter((q) => q.provider === 'openai')).toHaveLength(1);
    expect(served.map((r) => ('data' in r ? r.data.provider : r.provider))).toEqual(Array(6).fill('anthropic'));
    const reasons = served.map((r) => ('data' in r ? r.data.attempts : r.attempts)?.[0]?.reason).sort();
    expect(reasons).toEqual([...Array(5).fill('circuit_open'), 'upstream_5xx']);
    // The failed trial re-opened it; after the next cooldown a successful trial closes it.
    expect(await h.runtime.storage.get('aicb:openai:open')).toBeDefined();
    h.upstream.failProvider('openai', undefined);
    await cooledDown(h, 'openai');
    expect((await stream()).provider).toBe('openai');
    expect((await Promise.all([call(), call()])).map((r) => r.data.provider)).toEqual(['openai', 'openai']);
  });

  it('half-open: a trial that ends without a verdict (a 400, a cancelled stream) lets the next call be the trial at once', async () => {
    const h = await harness({ circuitBreaker: { failureThreshold: 1, cooldownMs: 300, windowMs: 10_000 } });
    const call = () =>
      h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] });
    h.upstream.failNext({ kind: 'status', status: 500 });
    await call();
    await cooledDown(h, 'openai');
    h.upstream.failNext({ kind: 'status', status: 400 });
    expect((await rejection(call())).details?.reason).toBe('upstream_rejected');
    // A streamed trial whose reader leaves at the first event.
    const stream = await h
      .caller(alice)
      .ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'openai', fallbacks: ['anthropic'] });
    for await (const e of stream) if (e.type === 'start') break;
    const r = await call();
    expect(r.data.provider).toBe('openai');
    expect(r.data.attempts).toBeUndefined();
  });

  it.skipIf(!redis.ok)('state is shared by instances on the same Redis', async () => {
    const opts = testRedisOptions(redis, 'ai-breaker');
    prefix = opts.keyPrefix;
    upstream = await createTestUpstream();
    const cb = { circuitBreaker: { failureThreshold: 1, cooldownMs: 5_000, windowMs: 10_000 } };
    const a = await harness(cb, { upstream, storage: await RedisStorage.connect(opts) });
    const b = await harness(cb, { upstream, storage: await RedisStorage.connect(opts) });
    upstream.failNext({ kind: 'status', status: 429 }, 1);
    await a.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'anthropic', fallbacks: ['openai'] });
    upstream.reset();
    const r = await b.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'anthropic', fallbacks: ['openai'] });
    expect(r.data.attempts?.[0]).toMatchObject({ provider: 'anthropic', reason: 'circuit_open' });
    expect(upstream.requests.map((q) => q.provider)).toEqual(['openai']);
  });
});

describe('a bad fallback reference', () => {
  it('is refused before anything is held (generateText and streamText): no reserve left in the ledger', async () => {
    const h = await harness();
    for (const call of [
      () => h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 's', provider: 'google', fallbacks: ['nope/x'] }),
      () => h.caller(alice).ai.streamText({ content: 'hello', systemPrompt: 's', provider: 'google', fallbacks: ['anthropic', 'typo'] }),
    ]) {
      const err = await rejection(call());
      expect(err.message).toContain('must be provider/model');
    }
    expect(await h.balance(alice.sub)).toBe(100_000);
    expect((await h.runtime.billing.ledger.entries(alice.sub)).map((e) => e.kind)).toEqual(['credit']);
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('in ai.fallbacks or an alias target is a config error at start', async () => {
    const { resolveConfig } = await import('../../config/resolveConfig.js');
    expect(() => resolveConfig({ ai: { fallbacks: ['gogle/gemini-2.5-flash'] } })).toThrow(/ai\.fallbacks\.0/);
    expect(() => resolveConfig({ ai: { aliases: { fast: 'opnai/gpt-4.1-mini' } } })).toThrow(/ai\.aliases\.fast/);
    expect(() =>
      resolveConfig({ ai: { aliases: { fast: 'openai/gpt-4.1-mini' }, fallbacks: ['fast', 'google', 'provider_c/gemini-2.5-pro'] } }),
    ).not.toThrow();
  });
});
