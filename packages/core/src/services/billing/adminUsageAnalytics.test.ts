import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { Retention } from '../retention/Retention.js';
import { backends, makeRuntime, type OpenStore } from './__tests__/kit.js';
import { RECENT_MS } from './adminAnalyticsCache.js';
import { adminUsageAnalytics } from './adminUsageAnalytics.js';
import { GLOBAL_SHARDS, placeInTop, shardOf, TOP_K, type TopEntry, usageKeys, usageWrites } from './globalUsage.js';
import type { UsageItem, UsageRecordItem } from './history.js';
import { ledgerKeys } from './Ledger.js';

const user = (i: number): Identity => ({ sub: `rank-user-${i}`, scopes: [], isAdmin: false, via: 'jwt' });

/** A store that records which logs were read: the ranking must read none. */
function recording(storage: Storage): { storage: Storage; logsRead: string[] } {
  const logsRead: string[] = [];
  const proxy = new Proxy(storage, {
    get(target, prop, receiver) {
      if (prop === 'readLog') return (log: string, opts?: object) => (logsRead.push(log), target.readLog(log, opts));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { storage: proxy, logsRead };
}

type Sums = Map<string, { cost: number; tokens: number; requests: number }>;

/** The expected ranking from per-user sums: cost then tokens, or tokens, then id. */
function expectedTop(sums: Sums, sortBy: 'cost' | 'tokens', limit: number): string[] {
  return [...sums]
    .sort(([a, x], [b, y]) =>
      sortBy === 'cost' ? y.cost - x.cost || y.tokens - x.tokens || a.localeCompare(b) : y.tokens - x.tokens || a.localeCompare(b),
    )
    .slice(0, limit)
    .map(([u]) => u);
}

describe('placeInTop', () => {
  it('keeps the exact TOP_K under growing figures, the same array when nothing changes', () => {
    const figures = new Map<string, [number, number]>();
    let list: TopEntry[] = [];
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let step = 0; step < 20_000; step++) {
      const u = `u${rand(300)}`;
      const [c, t] = figures.get(u) ?? [0, 0];
      const next: [number, number] = [c + (rand(3) === 0 ? 0 : rand(5)), t + rand(100)];
      figures.set(u, next);
      list = placeInTop(list, u, next[0], next[1]);
    }
    const want = [...figures]
      .sort(([a, x], [b, y]) => y[0] - x[0] || y[1] - x[1] || a.localeCompare(b))
      .slice(0, TOP_K)
      .map(([u, [c, t]]) => [u, c, t]);
    expect(list).toEqual(want);
    const last = list.at(-1)!;
    expect(placeInTop(list, 'nobody', last[1], last[2] - 1)).toBe(list);
    expect(placeInTop(list, list[0]![0], list[0]![1], list[0]![2])).toBe(list);
  });
});

describe('the user ranking from the top lists, over days and full lists (memory)', () => {
  it('equals the ranking from every user, for both orders and every limit, reading no user list', async () => {
    const base = new MemoryStorage();
    const { storage, logsRead } = recording(base);
    const days = ['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-04'];
    const sums: Sums = new Map();
    let seed = 11;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    // 1,200 users (75 a shard: every list full), a heavy tail, some users only on some days.
    for (const day of days)
      for (let c = 0; c < 3000; c++) {
        const id = `u${Math.floor(Math.sqrt(rand(1200 * 1200)))}`;
        const tokens = 10 + rand(500);
        const platform = rand(4) !== 0;
        const cost = platform ? rand(20) / 100 : 0;
        const item: UsageItem = {
          id: `${day}-${c}`,
          at: `${day}T12:00:00.000Z`,
          mode: platform ? 'platform' : 'byok',
          provider: 'openai',
          model: 'm',
          tokensUsed: tokens,
          tokensCharged: platform ? tokens : 0,
          platformFee: 0,
          estimatedCostUsd: cost,
        };
        const keys = usageKeys(id, day);
        await base.transact([keys.userDay, keys.global], (read) => ({ writes: usageWrites(read, id, day, item), result: undefined }));
        const s = sums.get(id) ?? { cost: 0, tokens: 0, requests: 0 };
        s.cost = Math.round((s.cost + cost) * 1e10) / 1e10;
        s.tokens += tokens;
        s.requests++;
        sums.set(id, s);
      }
    const perShard = new Array(GLOBAL_SHARDS).fill(0);
    for (const u of sums.keys()) perShard[shardOf(u)]++;
    expect(Math.min(...perShard)).toBeGreaterThan(TOP_K);
    for (const [from, to] of [
      [days[0]!, days[3]!],
      [days[1]!, days[1]!],
      ['2026-02-20', days[2]!],
    ] as const) {
      // The reference: the old ranking over every user of the days, through the day rows.
      const inRange = days.filter((d) => d >= from && d <= to);
      const daySums: Sums = new Map();
      const users = [...sums.keys()];
      const rows = await base.getMany<{
        totals: { tokensUsed: number; requests: number };
        byMode?: { platform: { estimatedCostUsd: number } };
      }>(users.flatMap((u) => inRange.map((d) => ledgerKeys.usageDay(u, d))));
      users.forEach((u, i) => {
        for (let d = 0; d < inRange.length; d++) {
          const row = rows[i * inRange.length + d];
          if (!row) continue;
          const s = daySums.get(u) ?? { cost: 0, tokens: 0, requests: 0 };
          s.cost = Math.round((s.cost + (row.byMode?.platform.estimatedCostUsd ?? 0)) * 1e10) / 1e10;
          s.tokens += row.totals.tokensUsed;
          s.requests += row.totals.requests;
          daySums.set(u, s);
        }
      });
      for (const sortBy of ['cost', 'tokens'] as const)
        for (const limit of [1, 10, 100]) {
          const r = await adminUsageAnalytics(storage, { from, to, groupBy: 'user', sortBy, limit });
          expect(
            r.topUsers!.map((u) => u.userId),
            `${sortBy} ${limit} ${from}..${to}`,
          ).toEqual(expectedTop(daySums, sortBy, limit));
          expect(r.truncated).toBeUndefined();
          for (const t of r.topUsers!)
            expect(t).toMatchObject({ tokensUsed: daySums.get(t.userId)!.tokens, requests: daySums.get(t.userId)!.requests });
        }
    }
    expect(logsRead).toEqual([]);
  }, 180_000);

  it('a day whose shard row predates the lists is ranked from the user lists', async () => {
    const storage = new MemoryStorage();
    const day = '2026-04-01';
    const item = (tokens: number): UsageItem => ({
      id: `i${tokens}`,
      at: `${day}T00:00:00.000Z`,
      mode: 'platform',
      provider: 'openai',
      model: 'm',
      tokensUsed: tokens,
      tokensCharged: tokens,
      platformFee: 0,
    });
    const record = async (id: string, tokens: number) => {
      const keys = usageKeys(id, day);
      await storage.transact([keys.userDay, keys.global], (read) => ({
        writes: usageWrites(read, id, day, item(tokens)),
        result: undefined,
      }));
    };
    await record('old-user', 500);
    // As an earlier release wrote it: no lists. Later calls keep it without (old-user would be missing).
    const key = usageKeys('old-user', day).global;
    const { top: _top, ...row } = (await storage.get<Record<string, unknown>>(key))!;
    await storage.set(key, row);
    await record('old-user', 1);
    expect(await storage.get<Record<string, unknown>>(key)).not.toHaveProperty('top');
    for (let i = 0; i < 5; i++) await record(`new-${i}`, 100 + i);
    const r = await adminUsageAnalytics(storage, { from: day, to: day, groupBy: 'user', sortBy: 'tokens', limit: 2 });
    expect(r.topUsers!.map((u) => u.userId)).toEqual(['old-user', 'new-4']);
  });
});

describe('what the console reads does not grow with the days nobody called on (memory)', () => {
  afterEach(() => vi.restoreAllMocks());
  /** A store that records the keys read through getMany. */
  function keysRead(storage: Storage): { storage: Storage; keys: string[] } {
    const keys: string[] = [];
    const proxy = new Proxy(storage, {
      get(target, prop, receiver) {
        if (prop === 'getMany') return (ks: readonly string[]) => (keys.push(...ks), target.getMany(ks));
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    return { storage: proxy, keys };
  }
  const dayOf = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);

  it('reads a ranked user day row only where it can exist, and the shard rows of a day that is over once', async () => {
    const base = new MemoryStorage();
    const rec = keysRead(base);
    // 20 users (lists not full) on two of six days: three days ago and today.
    const sums: Sums = new Map();
    for (const ago of [3, 0])
      for (let i = 0; i < 20; i++) {
        const id = `few-${i}`;
        const day = dayOf(ago);
        const tokens = 10 + ((i * 7 + ago * 3) % 40);
        const item: UsageItem = {
          id: `${day}-${i}`,
          at: `${day}T12:00:00.000Z`,
          mode: 'platform',
          provider: 'openai',
          model: 'm',
          tokensUsed: tokens,
          tokensCharged: tokens,
          platformFee: 0,
        };
        const keys = usageKeys(id, day);
        await base.transact([keys.userDay, keys.global], (read) => ({ writes: usageWrites(read, id, day, item), result: undefined }));
        const s = sums.get(id) ?? { cost: 0, tokens: 0, requests: 0 };
        s.tokens += tokens;
        s.requests++;
        sums.set(id, s);
      }
    const opts = { from: dayOf(5), to: dayOf(0), sortBy: 'tokens', limit: 5, series: true } as const;
    const first = await adminUsageAnalytics(rec.storage, opts);
    expect(first.topUsers!.map((u) => u.userId)).toEqual(expectedTop(sums, 'tokens', 5));
    for (const t of first.topUsers!) expect(t).toMatchObject({ tokensUsed: sums.get(t.userId)!.tokens, requests: 2 });
    // Each ranked user's two day rows, not six.
    const dayRows = rec.keys.filter((k) => k.startsWith('usageday:'));
    expect(dayRows).toHaveLength(5 * 2);
    expect((await base.getMany(dayRows)).every((row) => row !== undefined)).toBe(true);
    expect(rec.keys.filter((k) => k.startsWith('usageglobal:'))).toHaveLength(6 * GLOBAL_SHARDS);

    // Again at once: the answer just checked, nothing read (adminAnalyticsCache.test.ts).
    rec.keys.length = 0;
    expect(await adminUsageAnalytics(rec.storage, opts)).toEqual(first);
    expect(rec.keys).toEqual([]);
    // Again past that window, within the hour: the days that are over (ended more than an hour ago) come from memory.
    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + RECENT_MS);
    expect(await adminUsageAnalytics(rec.storage, opts)).toEqual(first);
    const open = [0, 1].filter((ago) => Date.now() - Date.parse(`${dayOf(ago)}T00:00:00Z`) < 25 * 3_600_000);
    expect(new Set(rec.keys.filter((k) => k.startsWith('usageglobal:')).map((k) => k.split(':')[1]))).toEqual(new Set(open.map(dayOf)));
  });
});

describe.each(backends)('the user ranking agrees with the usage logs on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  let dir: string;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('ranking');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0 } });
    dir = await mkdtemp(join(tmpdir(), 'ranking-'));
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('after concurrent metered and BYOK calls, and after retention archived the logs', async () => {
    const users = Array.from({ length: 40 }, (_, i) => user(i));
    for (const u of users)
      await rt.billing.credit({ userId: u.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: `seed-${u.sub}`, source: 'test' });
    // Every user's calls at once: 5 metered calls each (varied tokens and cost) and one BYOK call.
    await Promise.all(
      users.flatMap((u, i) => [
        ...Array.from({ length: 5 }, async (_, k) => {
          const r = await rt.billing.reserve({ identity: u, tokens: 1000, requestId: `${u.sub}-${k}` });
          await rt.billing.settle(r, {
            tokensUsed: 10 + ((i * 37 + k * 11) % 400),
            provider: 'openai',
            model: 'm',
            costUsd: ((i * 13) % 7) / 100,
          });
        }),
        rt.billing.recordByokUsage({ identity: u, provider: 'google', model: 'g', tokensUsed: (i * 53) % 300, estimatedCostUsd: 1 }),
      ]),
    );
    // What the usage logs say, per user.
    const sums: Sums = new Map();
    for (const u of users) {
      const s = { cost: 0, tokens: 0, requests: 0 };
      for (const e of await store.storage.readLog<UsageRecordItem>(ledgerKeys.usage(u.sub))) {
        if (e.record.mode === 'platform') s.cost = Math.round((s.cost + (e.record.estimatedCostUsd ?? 0)) * 1e10) / 1e10;
        s.tokens += e.record.tokensUsed;
        s.requests++;
      }
      sums.set(u.sub, s);
    }
    expect([...sums.values()].every((s) => s.requests === 6)).toBe(true);
    // Yesterday too: the calls may straddle midnight.
    const today = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const rank = async () => {
      const rec = recording(store.storage);
      const byCost = await adminUsageAnalytics(rec.storage, { from, to: today, groupBy: 'user', sortBy: 'cost', limit: 10 });
      const byTokens = await adminUsageAnalytics(rec.storage, { from, to: today, groupBy: 'user', sortBy: 'tokens', limit: 25 });
      expect(rec.logsRead).toEqual([]);
      return { byCost: byCost.topUsers!, byTokens: byTokens.topUsers! };
    };
    const first = await rank();
    expect(first.byCost.map((u) => u.userId)).toEqual(expectedTop(sums, 'cost', 10));
    expect(first.byTokens.map((u) => u.userId)).toEqual(expectedTop(sums, 'tokens', 25));
    for (const t of first.byTokens) expect(t).toMatchObject({ tokensUsed: sums.get(t.userId)!.tokens, requests: 6, byokRequests: 1 });

    // Retention archives (deletes) every ledger and usage record: the ranking stays as it was.
    const retention = new Retention(
      store.storage,
      { days: { ledger: 1, usage: 1, purchases: 1 }, exportDir: dir, format: 'jsonl', batchSize: 50 },
      createLogger('silent'),
    );
    const report = await retention.run(Date.now() + 2 * 86_400_000);
    expect(report.kinds.usage!.archived).toBe(users.length * 6);
    expect(await store.storage.readLog(ledgerKeys.usage(users[0]!.sub))).toEqual([]);
    expect(await rank()).toEqual(first);
  }, 120_000);
});
