import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';

const redis = await testRedis();
import { RateLimiter, rateLimitCaller, type RateLimitSettings } from './RateLimiter.js';

const settings = (over: Partial<RateLimitSettings> = {}): RateLimitSettings => ({
  enabled: true,
  windowMs: 60_000,
  maxRequests: 3,
  maxToolCalls: 2,
  ...over,
});

describe('RateLimiter on memory storage', () => {
  it('allows maxRequests hits per window, refuses the next, and starts over in the next window', async () => {
    let now = 120_000 + 15_000; // 15 s into a 60 s window
    const rl = new RateLimiter(new MemoryStorage(), settings(), { now: () => now });
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await rl.hit('requests', 'ip:1.2.3.4'));
    expect(seen.map((d) => d!.allowed)).toEqual([true, true, true, false]);
    expect(seen.map((d) => d!.remaining)).toEqual([2, 1, 0, 0]);
    expect(seen[3]!.resetSec).toBe(45);
    now = 180_000; // next window
    expect((await rl.hit('requests', 'ip:1.2.3.4'))!.allowed).toBe(true);
  });

  it('keeps callers and kinds apart, and counts several units at once', async () => {
    const rl = new RateLimiter(new MemoryStorage(), settings());
    expect((await rl.hit('toolCalls', 'u:alice', 2))!.allowed).toBe(true);
    expect((await rl.hit('toolCalls', 'u:alice'))!.allowed).toBe(false);
    expect((await rl.hit('toolCalls', 'u:bob'))!.allowed).toBe(true);
    expect((await rl.hit('requests', 'u:alice'))!.allowed).toBe(true);
    // A batch that does not fit is refused as a whole.
    expect((await rl.hit('toolCalls', 'u:carol', 3))!.allowed).toBe(false);
  });

  it('does nothing when disabled', async () => {
    const storage = new MemoryStorage();
    const rl = new RateLimiter(storage, settings({ enabled: false }));
    expect(await rl.hit('requests', 'ip:x')).toBeNull();
    expect(await storage.keys('')).toEqual([]);
  });

  it('writes IETF RateLimit headers, Retry-After only when refused, and a RATE_LIMITED error', async () => {
    const rl = new RateLimiter(new MemoryStorage(), settings({ windowMs: 10_000 }), { now: () => 4_000 });
    const req = await rl.hit('requests', 'ip:h');
    const call = await rl.hit('toolCalls', 'ip:h', 3);
    expect(rl.headers([req])).toEqual({
      RateLimit: '"requests";r=2;t=6',
      'RateLimit-Policy': '"requests";q=3;w=10, "tool-calls";q=2;w=10',
    });
    const refused = rl.headers([req, call]);
    expect(refused.RateLimit).toBe('"requests";r=2;t=6, "tool-calls";r=0;t=6');
    expect(refused['Retry-After']).toBe('6');
    expect(rl.headers([null])).toEqual({});
    const err = rl.refusal(call!, [req, call]);
    expect(err).toBeInstanceOf(CoreError);
    expect(err.appCode).toBe('RATE_LIMITED');
    expect(err.headers?.['Retry-After']).toBe('6');
    expect(err.details).toEqual({ limit: 2, kind: 'toolCalls', retryAfterSec: 6 });
  });
});

describe('rateLimitCaller', () => {
  it('uses the subject when there is one, else the address', () => {
    expect(rateLimitCaller({ sub: 'alice@example.com' }, '10.0.0.1')).toBe('u:alice@example.com');
    expect(rateLimitCaller(null, '10.0.0.1')).toBe('ip:10.0.0.1');
  });
  it('hashes long or unusual subjects into short printable keys, distinct from plain ones', () => {
    const weird = rateLimitCaller({ sub: 'a b\nc' }, 'x');
    expect(weird).toMatch(/^uh:[A-Za-z0-9_-]{32}$/);
    expect(rateLimitCaller({ sub: 'x'.repeat(500) }, 'x')).toMatch(/^uh:/);
    expect(rateLimitCaller({ sub: 'a b\nd' }, 'x')).not.toBe(weird);
  });
});

describe.skipIf(!redis.ok)('RateLimiter on redis', () => {
  const opts = testRedisOptions(redis, 'ratelimit');
  let a: RedisStorage;
  let b: RedisStorage;
  beforeAll(async () => {
    a = await RedisStorage.connect(opts);
    b = await RedisStorage.connect(opts);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await dropTestKeys(redis, opts.keyPrefix);
  });

  it('enforces one limit across two connections hit concurrently', async () => {
    // An hour-long window: a window change during the test is very unlikely.
    const limitA = new RateLimiter(a, settings({ maxToolCalls: 10, windowMs: 3_600_000 }));
    const limitB = new RateLimiter(b, settings({ maxToolCalls: 10, windowMs: 3_600_000 }));
    const hits = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? limitA : limitB).hit('toolCalls', 'u:shared')));
    expect(hits.filter((d) => d!.allowed)).toHaveLength(10);
    expect(hits.filter((d) => !d!.allowed)).toHaveLength(20);
  });

  it('lets requests through, with one warning, when the store is unreachable', async () => {
    const down = await RedisStorage.connect({ host: '127.0.0.1', port: 1, connectTimeoutMs: 200, commandTimeoutMs: 200 });
    const lines: string[] = [];
    const rl = new RateLimiter(down, settings(), { logger: createLogger('warn', (l) => lines.push(l)) });
    try {
      expect(await rl.hit('requests', 'ip:a')).toBeNull();
      expect(await rl.hit('requests', 'ip:a')).toBeNull();
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!).msg).toMatch(/not being limited/);
    } finally {
      await down.close();
    }
  });

  it('after a failed count, skips a hung store for a second instead of waiting on it every request', async () => {
    let now = 1_000_000;
    let asked = 0;
    let hung = true;
    let fail: (() => void) | undefined;
    const store = new MemoryStorage();
    // A store that hangs until its (here 5 s) timeout, then fails, as a stopped PostgreSQL does; the
    // first hang is cut short by the test (`fail`), so nothing here waits on a timer.
    const hanging = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== 'increment' && prop !== 'transact') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          asked++;
          if (!hung) return (value as (...a: unknown[]) => unknown).apply(target, args);
          await new Promise<void>((r) => {
            fail = r;
            setTimeout(r, 5000).unref();
          });
          throw new CoreError('UNAVAILABLE', 'storage unavailable');
        };
      },
    });
    const rl = new RateLimiter(hanging, settings({ maxRequests: 2 }), { now: () => now });
    const first = rl.hit('requests', 'ip:a');
    await vi.waitFor(() => expect(asked).toBe(1));
    fail!();
    expect(await first).toBeNull();
    const started = performance.now();
    expect(await rl.hit('requests', 'ip:a')).toBeNull();
    expect(await rl.hit('requests', 'ip:b')).toBeNull();
    // One wait for the store, not three: the next two never ask it, and answer well within the
    // 5 s one of them would wait (a bound a loaded machine does not reach).
    expect(asked).toBe(1);
    expect(performance.now() - started).toBeLessThan(2500);
    // A second later the store is asked again, and counts once it answers.
    hung = false;
    now += 1_000;
    expect((await rl.hit('requests', 'ip:a'))!.allowed).toBe(true);
    expect(asked).toBe(2);
  });

  it("storeOutage 'refuse': a count the store failed throws its UNAVAILABLE; the next second's hits go through without asking", async () => {
    let now = 1_000_000;
    let down = true;
    const store = new MemoryStorage();
    const failing = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== 'increment' && prop !== 'transact') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          if (down) throw new CoreError('UNAVAILABLE', 'storage unavailable');
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const rl = new RateLimiter(failing, settings(), { now: () => now, storeOutage: 'refuse' });
    await expect(rl.hit('requests', 'ip:a')).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    expect(await rl.hit('requests', 'ip:a')).toBeNull();
    down = false;
    now += 1_000;
    expect((await rl.hit('requests', 'ip:a'))!.allowed).toBe(true);
  });
});
