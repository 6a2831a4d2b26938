import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, waitFor, type TestUpstream } from '@ai-backend/test-utils';
import { resolveConfig } from '../../config/resolveConfig.js';
import type { ProviderId } from '../../config/sections/ai.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { CircuitBreaker } from './CircuitBreaker.js';
import { ProviderRegistry } from './ProviderRegistry.js';
import { RegistryProbe } from './RegistryProbe.js';

/**
 * Two probes on one store (as two instances on one Redis), driven tick by tick against a real
 * test upstream: one round per slot, shared results, one degradation event per transition, and
 * the breaker following the probe.
 */
let upstream: TestUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

// An hour: the test drives the ticks itself, and a real slot boundary never falls inside it.
const INTERVAL = 3_600_000;

async function setup() {
  upstream = await createTestUpstream();
  const config = resolveConfig({ serverProviders: ['openai', 'google'], ai: upstream.aiConfig({ apiKey: 'server-key' }) });
  const storage = new MemoryStorage();
  const logger = createLogger('silent');
  const breaker = new CircuitBreaker(storage, config.ai.circuitBreaker, logger);
  const degraded: Array<[ProviderId, string]> = [];
  const probe = () =>
    new RegistryProbe(
      { enabled: true, intervalMs: INTERVAL, timeoutMs: 500 },
      { storage, providers: new ProviderRegistry(config), logger, breaker, onDegraded: (p, r) => degraded.push([p, r]) },
    );
  return { storage, breaker, degraded, a: probe(), b: probe() };
}

/** Run both probes' ticks in the next slot (a fresh lease key). */
async function nextSlot(s: Awaited<ReturnType<typeof setup>>) {
  const slot = Math.floor(Date.now() / INTERVAL);
  // Another slot than the last one, without waiting a minute: drop the lease of this slot.
  await s.storage.delete(`aiprobe:lease:${slot}`);
  await Promise.all([s.a.tick(), s.b.tick()]);
}

describe('RegistryProbe', () => {
  it('one of two instances probes per slot; both read the same results', async () => {
    const s = await setup();
    await Promise.all([s.a.tick(), s.b.tick()]);
    expect(s.a.rounds + s.b.rounds).toBe(1);
    // Only the server-paid providers, once each.
    expect(upstream!.requests.map((q) => q.provider).sort()).toEqual(['google', 'openai']);
    // A second tick in the same slot does nothing.
    await Promise.all([s.a.tick(), s.b.tick()]);
    expect(s.a.rounds + s.b.rounds).toBe(1);
    expect(upstream!.requests).toHaveLength(2);
    expect(await s.a.results()).toEqual(await s.b.results());
    expect((await s.b.results()).google).toMatchObject({ ok: true, status: 200 });
  });

  it('a failing provider: one event per transition, the breaker open while it fails, closed on recovery', async () => {
    const s = await setup();
    await nextSlot(s);
    upstream!.failProvider('google', { kind: 'status', status: 500 });
    await nextSlot(s);
    await nextSlot(s);
    await nextSlot(s);
    expect(s.degraded).toEqual([['google', 'unexpected_status']]);
    expect((await s.a.results()).google).toMatchObject({ ok: false, reason: 'unexpected_status', status: 500 });
    expect(await s.breaker.state('google')).toBe('open');
    expect(await s.breaker.state('openai')).toBe('closed');
    upstream!.failProvider('google', undefined);
    await nextSlot(s);
    expect((await s.b.results()).google?.ok).toBe(true);
    expect(await s.breaker.state('google')).toBe('closed');
    upstream!.failProvider('google', { kind: 'status', status: 401 });
    await nextSlot(s);
    expect(s.degraded).toEqual([
      ['google', 'unexpected_status'],
      ['google', 'invalid_key'],
    ]);
  });

  it('the breaker a failed probe opened stays open until the next round, however short the cooldown', async () => {
    const s = await setup();
    const breaker = new CircuitBreaker(s.storage, { failureThreshold: 5, cooldownMs: 100, windowMs: 1000 }, createLogger('silent'));
    const probe = new RegistryProbe(
      { enabled: true, intervalMs: INTERVAL, timeoutMs: 500 },
      {
        storage: s.storage,
        providers: new ProviderRegistry(resolveConfig({ serverProviders: ['google'], ai: upstream!.aiConfig({ apiKey: 'server-key' }) })),
        logger: createLogger('silent'),
        breaker,
      },
    );
    upstream!.failProvider('google', { kind: 'status', status: 503 });
    await probe.tick();
    expect(await breaker.state('google')).toBe('open');
    // Well past the cooldown, no round since: the probe's verdict still holds (a deliberate pause,
    // asserting nothing reopens the breaker).
    await new Promise((r) => setTimeout(r, 300));
    expect(await breaker.state('google')).toBe('open');
    expect(await breaker.admit('google')).toBe('skip');
    upstream!.failProvider('google', undefined);
    await s.storage.delete(`aiprobe:lease:${Math.floor(Date.now() / INTERVAL)}`);
    await probe.tick();
    expect(await breaker.state('google')).toBe('closed');
  });

  it('a failure that lost to a newer round leaves the breaker and the events alone', async () => {
    const s = await setup();
    await nextSlot(s);
    expect((await s.a.results()).google?.ok).toBe(true);
    // While this round's google probe is out, another instance's newer round stores its own
    // (healthy) result: the get this probe's compare-and-set is based on happens before it.
    const get = s.storage.get.bind(s.storage);
    s.storage.get = (async (key: string) => {
      const prev = await get(key);
      if (key === 'aiprobe:result:google')
        await s.storage.set(key, { ok: true, latencyMs: 1, checkedAt: new Date(Date.now() + 1000).toISOString() });
      return prev;
    }) as typeof s.storage.get;
    upstream!.failProvider('google', { kind: 'status', status: 503 });
    await nextSlot(s);
    expect((await s.a.results()).google?.ok).toBe(true);
    expect(await s.breaker.state('google')).toBe('closed');
    expect(s.degraded).toEqual([]);
  });

  it('a probe that hung until its timeout while a newer round stored the recovery changes nothing', async () => {
    const s = await setup();
    await nextSlot(s);
    // a's round: google hangs (until the probe's 500 ms timeout).
    upstream!.failProvider('google', { kind: 'hang' });
    await s.storage.delete(`aiprobe:lease:${Math.floor(Date.now() / INTERVAL)}`);
    const rounds = { a: s.a.rounds, b: s.b.rounds };
    const hung = s.a.tick();
    await waitFor(() => upstream!.requests.some((q) => q.provider === 'google' && q.outcome === 'hang'), { what: 'the hanging probe' });
    // Meanwhile google is back and b's newer round stores that, before a's probe times out.
    upstream!.failProvider('google', undefined);
    await s.storage.delete(`aiprobe:lease:${Math.floor(Date.now() / INTERVAL)}`);
    await s.b.tick();
    const newer = (await s.b.results()).google;
    expect(newer).toMatchObject({ ok: true });
    await hung;
    expect({ a: s.a.rounds, b: s.b.rounds }).toEqual({ a: rounds.a + 1, b: rounds.b + 1 });
    // The older verdict (timeout) is dropped: the newer result stays, no event, breaker closed.
    expect((await s.a.results()).google).toEqual(newer);
    expect(s.degraded).toEqual([]);
    expect(await s.breaker.state('google')).toBe('closed');
  });

  it('disabled: start() does nothing', async () => {
    const s = await setup();
    const off = new RegistryProbe(
      { enabled: false, intervalMs: 50, timeoutMs: 50 },
      { storage: s.storage, providers: new ProviderRegistry(resolveConfig({})), logger: createLogger('silent') },
    );
    off.start(); // an enabled probe ticks at once, inside start()
    expect(off.ticks).toBe(0);
    await off.stop();
  });
});

describe('RegistryProbe with named providers', () => {
  it('probes server-paid named providers with their own check (GET /models; keyless without a key); not Bedrock or Vertex', async () => {
    upstream = await createTestUpstream();
    const config = resolveConfig({
      serverProviders: ['local', 'mist', 'bed'],
      ai: {
        providers: {
          local: { type: 'openai-compatible', baseUrl: upstream.namedBaseUrl('local'), defaultModel: 'm' },
          mist: {
            type: 'mistral',
            baseUrl: upstream.namedBaseUrl('mist', 'mistral'),
            apiKey: 'mist-key',
            defaultModel: 'mistral-small-latest',
          },
          bed: { type: 'bedrock', region: 'us-east-1', defaultModel: 'anthropic.claude-3-haiku' },
        },
      },
    });
    const storage = new MemoryStorage();
    const logger = createLogger('silent');
    const breaker = new CircuitBreaker(storage, config.ai.circuitBreaker, logger);
    const degraded: Array<[ProviderId, string]> = [];
    const probe = new RegistryProbe(
      { enabled: true, intervalMs: INTERVAL, timeoutMs: 500 },
      { storage, providers: new ProviderRegistry(config), logger, breaker, onDegraded: (p, r) => degraded.push([p, r]) },
    );
    expect(probe.targets()).toEqual(['local', 'mist']);
    upstream.failProvider('mist', { kind: 'status', status: 503 });
    await probe.tick();
    expect(upstream.requests.map((r) => [r.path, r.apiKey])).toEqual(
      expect.arrayContaining([
        ['/named/openai-chat/local/v1/models', undefined],
        ['/named/mistral/mist/v1/models', 'mist-key'],
      ]),
    );
    const results = await probe.results();
    expect(results.local).toMatchObject({ ok: true });
    expect(results.mist).toMatchObject({ ok: false, reason: 'unexpected_status', status: 503 });
    expect(await breaker.state('mist')).toBe('open');
    expect(degraded).toEqual([['mist', 'unexpected_status']]);
  });
});
