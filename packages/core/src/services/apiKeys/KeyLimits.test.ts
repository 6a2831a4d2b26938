import { describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Storage } from '../../kernel/Storage.js';
import { KeyLimits } from './KeyLimits.js';

const logger = createLogger('silent');

describe('KeyLimits', () => {
  it('requests per minute: refused past the limit with 429 headers, per key', async () => {
    const refusals: string[] = [];
    const limits = new KeyLimits(new MemoryStorage(), logger, (k) => refusals.push(k));
    const grant = { id: 'k1', requestsPerMinute: 3 };
    // Start well inside a minute so the calls share one window.
    if (60_000 - (Date.now() % 60_000) < 2_000) await new Promise((r) => setTimeout(r, 2_100));
    for (let i = 0; i < 3; i++) await limits.request(grant);
    const err = await limits.request(grant).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CoreError);
    expect(err).toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_requests_limit' } });
    expect((err as CoreError).headers).toMatchObject({ 'Retry-After': expect.any(String), RateLimit: expect.stringContaining('"key-requests";r=0') });
    await limits.request({ id: 'k2', requestsPerMinute: 3 });
    await limits.request({ id: 'k3' }); // no limit: nothing counted
    expect(refusals).toEqual(['requests']);
  });

  it('concurrent calls: slots are taken and given back once each', async () => {
    const limits = new KeyLimits(new MemoryStorage(), logger);
    const grant = { id: 'c', concurrent: 2 };
    const one = await limits.acquire(grant);
    const two = await limits.acquire(grant);
    await expect(limits.acquire(grant)).rejects.toMatchObject({ appCode: 'RATE_LIMITED', details: { reason: 'key_concurrent_limit' }, headers: { 'Retry-After': '1' } });
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
