import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { resolveConfig } from '../config/resolveConfig.js';
import { createRuntime } from '../createRuntime.js';
import { CLEAR_CACHES } from './createSignals.js';
import { createLogger } from '../kernel/Logger.js';
import { RedisSignals } from './RedisSignals.js';
import type { Runtime } from './Runtime.js';

const redis = await testRedis();
const quiet = createLogger('silent');

/** Poll until `fn` is true (signals arrive asynchronously). */
const until = (fn: () => boolean, timeoutMs = 3000) => waitFor(fn, { timeoutMs, intervalMs: 5, what: 'the signal arrived' });

describe.skipIf(!redis.ok)('RedisSignals', () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });

  it('reaches every instance on the same prefix exactly once, the publisher included, and no other prefix', async () => {
    const opts = testRedisOptions(redis, 'signals');
    const [a, b, other] = await Promise.all([
      RedisSignals.connect(opts, quiet),
      RedisSignals.connect(opts, quiet),
      RedisSignals.connect({ ...opts, keyPrefix: `${opts.keyPrefix}x:` }, quiet),
    ]);
    open.push(a, b, other);
    const got = { a: [] as string[], b: [] as string[], other: [] as string[] };
    a.subscribe('t', (m) => got.a.push(m));
    b.subscribe('t', (m) => got.b.push(m));
    other.subscribe('t', (m) => got.other.push(m));
    b.subscribe('unrelated', (m) => got.b.push(`unrelated:${m}`));
    expect(await a.publish('t', 'one')).toBe(1); // the other instance on the prefix: b (not a itself, not other)
    expect(got.a).toEqual(['one']); // the publisher runs its handlers at once
    await until(() => got.b.length === 1);
    await new Promise((r) => setTimeout(r, 50)); // a duplicate or stray notice would arrive by now
    expect(got).toEqual({ a: ['one'], b: ['one'], other: [] });
  });

  it("admin cache clearing on one runtime empties the other runtime's caches", async () => {
    const config = resolveConfig({ storage: { type: 'memory', shared: 'redis', redis: testRedisOptions(redis, 'signals-rt') } });
    const runtimes: Runtime[] = [await createRuntime(config, { logger: quiet }), await createRuntime(config, { logger: quiet })];
    open.push(...runtimes);
    const [a, b] = runtimes as [Runtime, Runtime];
    expect(b.signals.kind).toBe('redis');
    let tokens = 0;
    let models = 0;
    b.caches.set('tokens', () => void tokens++);
    b.caches.set('models', () => void models++);
    await a.signals.publish(CLEAR_CACHES, 'tokens');
    await until(() => tokens === 1);
    expect(models).toBe(0);
    await a.signals.publish(CLEAR_CACHES, 'all');
    await until(() => tokens === 2 && models === 1);
  });
});
