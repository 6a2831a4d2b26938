import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Storage } from '../../kernel/Storage.js';
import { windowClock } from '@ai-backend/test-utils';
import { KeyLimits, type TokenReservation } from './KeyLimits.js';
import { backends, type OpenStore } from '../billing/__tests__/kit.js';

const logger = createLogger('silent');

describe('KeyLimits', () => {
  it('requests per minute: refused past the limit with 429 headers, per key', async () => {
    const refusals: string[] = [];
    // A clock one second into a minute, so the calls share one window whatever the wall clock says.
    const limits = new KeyLimits(
      new MemoryStorage(),
      logger,
      (k) => refusals.push(k),
      () => 1_000 * 60_000 + 1_000,
    );
    const grant = { id: 'k1', requestsPerMinute: 3 };
    for (let i = 0; i < 3; i++) await limits.request(grant);
    const err = await limits.request(grant).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CoreError);
    expect(err).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_requests_limit' } });
    expect((err as CoreError).headers).toMatchObject({
      'Retry-After': expect.any(String),
      RateLimit: expect.stringContaining('"key-requests";r=0'),
    });
    await limits.request({ id: 'k2', requestsPerMinute: 3 });
    await limits.request({ id: 'k3' }); // no limit: nothing counted
    expect(refusals).toEqual(['requests']);
  });

  it('concurrent calls: slots are taken and given back once each', async () => {
    const limits = new KeyLimits(new MemoryStorage(), logger);
    const grant = { id: 'c', concurrent: 2 };
    const one = await limits.acquire(grant);
    const two = await limits.acquire(grant);
    await expect(limits.acquire(grant)).rejects.toMatchObject({
      appCode: 'RATE_LIMITED',
      details: { reason: 'key_concurrent_limit' },
      headers: { 'Retry-After': '1' },
    });
    await one();
    await one(); // a second give-back frees nothing more
    const three = await limits.acquire(grant);
    await expect(limits.acquire(grant)).rejects.toMatchObject({ appCode: 'RATE_LIMITED' });
    await two();
    await three();
  });

  it('an unreachable counter store lets calls through (as the server rate limiter does)', async () => {
    const broken = new MemoryStorage();
    (broken as unknown as Storage).increment = async () => {
      throw new CoreError('UNAVAILABLE', 'storage unavailable');
    };
    const limits = new KeyLimits(broken, logger);
    await expect(limits.request({ id: 'x', requestsPerMinute: 1 })).resolves.toBeUndefined();
    await expect(limits.request({ id: 'x', requestsPerMinute: 1 })).resolves.toBeUndefined();
    const release = await limits.acquire({ id: 'x', concurrent: 1 });
    await release();
  });
});

describe.each(backends)('KeyLimits tokens per minute on $name', (backend) => {
  let store: OpenStore;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('keytpm');
  });
  afterEach(async () => store.cleanup());

  it('a concurrent burst is admitted by its worst case: never more than the limit', async () => {
    const refusals: string[] = [];
    // Two instances: two KeyLimits on two connections to the same store, reading one clock that
    // starts at a minute's beginning, so the reservations share one fixed window.
    const clock = windowClock(60_000).now;
    const one = new KeyLimits(store.storage, logger, (k) => refusals.push(k), clock);
    const two = new KeyLimits(await store.another(), logger, (k) => refusals.push(k), clock);
    const grant = { id: `tpm${backend.name}`, tokensPerMinute: 1_000 };
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).reserveTokens(grant, 100)));
    const admitted = outcomes.filter((o): o is PromiseFulfilledResult<TokenReservation> => o.status === 'fulfilled').map((o) => o.value);
    expect(admitted).toHaveLength(10);
    for (const o of outcomes.filter((o) => o.status === 'rejected'))
      expect((o as PromiseRejectedResult).reason).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_tokens_limit' } });
    expect(refusals).toHaveLength(30);
    // Settling to what the calls used frees the rest; a release frees all; a second close does nothing.
    for (const r of admitted.slice(0, 5)) await r.settle(40);
    await admitted[5]!.release();
    await admitted[5]!.settle(100);
    const next = await Promise.allSettled(Array.from({ length: 10 }, () => one.reserveTokens(grant, 100)));
    // Held now: 5 × 40 + 4 × 100 = 600 of 1,000: four more calls of 100 fit.
    expect(next.filter((o) => o.status === 'fulfilled')).toHaveLength(4);
  });

  it('a call whose worst case alone exceeds the limit is refused outright, nothing held', async () => {
    const limits = new KeyLimits(store.storage, logger, undefined, windowClock(60_000).now);
    const grant = { id: `big${backend.name}`, tokensPerMinute: 500 };
    await expect(limits.reserveTokens(grant, 501)).rejects.toMatchObject({
      appCode: 'INVALID_PARAMS',
      details: { reason: 'key_tokens_limit', requested: 501, limit: 500 },
    });
    await expect(limits.reserveTokens(grant, 500)).resolves.toBeDefined();
  });
});
