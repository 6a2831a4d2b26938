import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Identity } from '../../kernel/identity.js';
import type { Storage } from '../../kernel/Storage.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { makeRuntime } from './__tests__/kit.js';
import { ANSWERS, RECENT_MS } from './adminAnalyticsCache.js';
import { adminUsageAnalytics, type AdminAnalyticsOptions } from './adminUsageAnalytics.js';
import { usageKeys, usageWrites } from './globalUsage.js';
import type { UsageItem } from './history.js';

/** A view of `storage` that records the keys read (getMany, get) and the logs read: a Storage object of its own, so its own caches. */
function keysRead(storage: Storage): { storage: Storage; keys: string[] } {
  const keys: string[] = [];
  const proxy = new Proxy(storage, {
    get(target, prop, receiver) {
      if (prop === 'getMany') return (ks: readonly string[]) => (keys.push(...ks), target.getMany(ks));
      if (prop === 'get') return (k: string) => (keys.push(k), target.get(k));
      if (prop === 'readLog') return (log: string, opts?: object) => (keys.push(`log:${log}`), target.readLog(log, opts));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { storage: proxy, keys };
}

const today = () => new Date(Date.now()).toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** A call recorded as another instance records it: through the store, not this process's BillingService. */
async function recordElsewhere(storage: Storage, userId: string, tokens: number): Promise<void> {
  const day = today();
  const item: UsageItem = {
    id: `${userId}-${tokens}-${Math.random()}`,
    at: new Date().toISOString(),
    mode: 'platform',
    provider: 'openai',
    model: 'm',
    tokensUsed: tokens,
    tokensCharged: tokens,
    platformFee: 0,
    estimatedCostUsd: tokens / 1e6,
  };
  const keys = usageKeys(userId, day);
  await storage.transact([keys.userDay, keys.global], (read) => ({ writes: usageWrites(read, userId, day, item), result: undefined }));
}

const options = (): AdminAnalyticsOptions => ({ from: daysAgo(13), to: today(), sortBy: 'cost', limit: 10, series: true });

describe("the console's usage answers per store (adminAnalyticsCache)", () => {
  afterEach(() => vi.restoreAllMocks());

  it('a repeated poll within RECENT_MS reads nothing and answers the same; after it, the shard rows of the open days only', async () => {
    const base = new MemoryStorage();
    for (let i = 0; i < 60; i++) await recordElsewhere(base, `u${i}`, 100 + i);
    const rec = keysRead(base);
    const first = await adminUsageAnalytics(rec.storage, options());
    expect(first.topUsers!.map((u) => u.userId)).toEqual(Array.from({ length: 10 }, (_, i) => `u${59 - i}`));
    expect(rec.keys.some((k) => k.startsWith('usageday:'))).toBe(true);

    rec.keys.length = 0;
    expect(await adminUsageAnalytics(rec.storage, options())).toBe(first);
    expect(rec.keys).toEqual([]);

    // Past the window: the rows of the days not over are read again (no user's day row: they did not change).
    const now = Date.now() + RECENT_MS;
    vi.spyOn(Date, 'now').mockReturnValue(now);
    expect(await adminUsageAnalytics(rec.storage, options())).toBe(first);
    expect(rec.keys.length).toBeGreaterThan(0);
    expect(rec.keys.every((k) => k.startsWith('usageglobal:'))).toBe(true);
    // The answer equals one computed from scratch (another Storage object: nothing cached).
    expect(await adminUsageAnalytics(keysRead(base).storage, options())).toEqual(first);
  });

  it("another instance's call shows after at most RECENT_MS, and then equals an answer computed from scratch", async () => {
    const base = new MemoryStorage();
    for (let i = 0; i < 20; i++) await recordElsewhere(base, `u${i}`, 100 + i);
    const first = await adminUsageAnalytics(base, options());
    await recordElsewhere(base, 'newcomer', 10_000);
    // Within the window: the answer checked less than RECENT_MS ago (the documented staleness bound).
    expect(await adminUsageAnalytics(base, options())).toBe(first);
    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + RECENT_MS);
    const after = await adminUsageAnalytics(base, options());
    expect(after.topUsers![0]!.userId).toBe('newcomer');
    expect(after.totals.requests).toBe(first.totals.requests + 1);
    expect(after).toEqual(await adminUsageAnalytics(keysRead(base).storage, options()));
  });

  it("this process's own metered and BYOK calls show at once", async () => {
    const storage = new MemoryStorage();
    const rt = await makeRuntime(storage, { billing: { platformFeeRate: 0 } });
    try {
      const user: Identity = { sub: 'own-user', scopes: [], isAdmin: false, via: 'jwt' };
      await rt.billing.credit({ userId: user.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
      const before = await adminUsageAnalytics(storage, options());
      expect(before.totals.requests).toBe(0);
      const r = await rt.billing.reserve({ identity: user, tokens: 1000, requestId: 'own-1' });
      await rt.billing.settle(r, { tokensUsed: 40, provider: 'openai', model: 'm' });
      const afterSettle = await adminUsageAnalytics(storage, options());
      expect(afterSettle.totals).toMatchObject({ requests: 1, platformRequests: 1, tokensUsed: 40 });
      await rt.billing.recordByokUsage({ identity: user, provider: 'google', model: 'g', tokensUsed: 7, estimatedCostUsd: 0 });
      const afterByok = await adminUsageAnalytics(storage, options());
      expect(afterByok.totals).toMatchObject({ requests: 2, byokRequests: 1, tokensUsed: 47 });
      expect(afterByok.topUsers).toEqual([expect.objectContaining({ userId: 'own-user', requests: 2 })]);
    } finally {
      await rt.close();
    }
  });

  it('each argument set has its own answer, and at most ANSWERS are kept per store', async () => {
    const base = new MemoryStorage();
    for (let i = 0; i < 20; i++) await recordElsewhere(base, `u${i}`, 100 + i);
    const rec = keysRead(base);
    const variants = Array.from({ length: ANSWERS + 1 }, (_, i) => ({ ...options(), limit: i + 1 }));
    const answers = [];
    for (const v of variants) answers.push(await adminUsageAnalytics(rec.storage, v));
    expect(answers.map((a) => a.topUsers!.length)).toEqual(variants.map((v) => v.limit));
    // The most recent ANSWERS are served from memory; the first one was dropped and is computed again.
    rec.keys.length = 0;
    for (const [i, v] of variants.entries()) if (i > 0) expect(await adminUsageAnalytics(rec.storage, v)).toBe(answers[i]);
    expect(rec.keys).toEqual([]);
    const again = await adminUsageAnalytics(rec.storage, variants[0]!);
    expect(again).not.toBe(answers[0]);
    expect(again).toEqual(answers[0]);
    expect(rec.keys.length).toBeGreaterThan(0);
  });
});
