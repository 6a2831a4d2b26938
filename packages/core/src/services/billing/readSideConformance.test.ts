import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../kernel/identity.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { admin, alice, backends, bob, call, makeRuntime, type OpenStore } from './__tests__/kit.js';
import type { LedgerEntry } from './types.js';

/**
 * One workload on every store, and every read-side answer (histories, analytics, the console's
 * views) compared across the stores and with the ledger, the source of truth: the usage log and
 * the day rows are maintained in the ledger's transactions, so each figure must equal a sum of
 * ledger entries on every store alike.
 */

const users: Identity[] = Array.from({ length: 24 }, (_, i) => ({
  ...bob,
  sub: `user-${String(i).padStart(2, '0')}`,
  email: `u${i}@example.com`,
}));

async function platform(
  rt: Runtime,
  who: Identity,
  requestId: string,
  held: number,
  used: number,
  provider: string,
  model: string,
  costUsd: number,
  metadata?: Record<string, unknown>,
) {
  const r = await rt.billing.reserve({ identity: who, tokens: held, requestId, costUsd });
  await rt.billing.settle(r, { tokensUsed: used, provider, model, costUsd, ...(metadata ? { metadata } : {}) });
}

/** The same calls in the same order on every store (no random ids, no timing). */
async function workload(rt: Runtime): Promise<void> {
  const credit = (userId: string, tokens: number, type: 'subscription' | 'one_time', key: string) =>
    rt.billing.credit({ userId, tokens, type, idempotencyKey: key, source: 'test' });
  await credit(alice.sub, 50_000, 'subscription', 'a-sub');
  await credit(alice.sub, 2_000, 'one_time', 'a-one');
  await credit(alice.sub, 2_000, 'one_time', 'a-one'); // a replay credits nothing
  await credit(bob.sub, 1_000, 'subscription', 'b-sub');
  for (let i = 0; i < 9; i++)
    await platform(rt, alice, `a-${i}`, 400, 37 * i + 11, i % 3 ? 'openai' : 'anthropic', `m${i % 2}`, Math.round(i * 1.7e6) / 1e9);
  // Failed and abandoned calls: held, then given back; in the ledger, never in a history or total.
  for (const id of ['a-fail-1', 'a-fail-2'])
    await rt.billing.release(await rt.billing.reserve({ identity: alice, tokens: 300, requestId: id }), 'upstream failed');
  // BYOK: recorded, never charged (and a replay of one records nothing).
  for (const id of ['a-byok-1', 'a-byok-2', 'a-byok-1'])
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'google',
      model: 'g1',
      tokensUsed: 250,
      estimatedCostUsd: 0.0125,
      requestId: id,
    });
  // A cache hit charged chargeRatio 0.25 of a 1000-token answer, as serveHit records it.
  await platform(rt, alice, 'a-cache', 250, 250, 'openai', 'm0', 0.000_625, { cache: 'hit', cachedTokensUsed: 1000 });
  // A priced MCP gateway tool call (provider mcp:<server>, model the tool), and an embedding.
  await platform(rt, alice, 'a-tool', 5, 5, 'mcp:files', 'read', 0, { type: 'mcp_tool', name: 'files_read' });
  await platform(rt, alice, 'a-embed', 64, 64, 'openai', 'text-embedding-3-small', 0.000_001_28, { type: 'embedding' });
  // An overrun past bob's balance: charged as far as it goes, the rest uncollected.
  await platform(rt, bob, 'b-over', 500, 2_000, 'openai', 'm1', 0.003);
  for (const [i, u] of users.entries()) {
    await credit(u.sub, 100_000, 'subscription', `seed-${u.sub}`);
    await platform(rt, u, `${u.sub}-1`, 2_000, 100 + ((i * 37) % 500), 'openai', 'm0', ((i * 53) % 97) / 1e4);
    if (i % 3 === 0)
      await rt.billing.recordByokUsage({
        identity: u,
        provider: 'anthropic',
        model: 'c',
        tokensUsed: 900,
        estimatedCostUsd: 0.5,
        requestId: `${u.sub}-b`,
      });
  }
}

async function allPages(rt: Runtime, path: string, input: Record<string, unknown>, key: string, who: Identity) {
  const pages: Array<{ items: Array<Record<string, unknown>>; nextCursor?: number }> = [];
  let cursor: number | undefined;
  do {
    const p = await call(rt, path, { ...input, ...(cursor !== undefined ? { cursor } : {}) }, who);
    pages.push({ items: p[key], ...(p.nextCursor !== undefined ? { nextCursor: p.nextCursor } : {}) });
    cursor = p.nextCursor;
  } while (cursor !== undefined);
  return pages;
}

/** Every answer the read side gives for the workload, without ids and clock times. */
async function answers(rt: Runtime) {
  const usage = await allPages(rt, 'billing.getUsageHistory', { limit: 4 }, 'usage', alice);
  const consumption = await allPages(rt, 'billing.getConsumptionHistory', { limit: 5 }, 'consumption', alice);
  const purchases = await allPages(rt, 'billing.getPurchaseHistory', { limit: 1 }, 'purchases', alice);
  const topups = await allPages(rt, 'billing.getTopupHistory', { limit: 1 }, 'topups', alice);
  const analytics = await call(rt, 'billing.getUsageAnalytics', { days: 3, includeHistory: true, historyLimit: 1000 }, alice);
  const bobs = await call(rt, 'billing.getUsageHistory', { limit: 1000 }, bob);
  const userUsage = await call(rt, 'admin.userUsage', { userId: alice.sub, days: 3 }, admin);
  const activity = await allPages(rt, 'admin.userActivity', { userId: alice.sub, kind: 'usage', limit: 6 }, 'items', admin);
  const byCost = await call(rt, 'admin.usageAnalytics', { days: 3, limit: 5 }, admin);
  const byTokens = await call(rt, 'admin.usageAnalytics', { days: 3, limit: 5, sortBy: 'tokens' }, admin);
  const strip = (v: unknown): unknown =>
    JSON.parse(JSON.stringify(v), (k, x) =>
      k === 'id' || k === 'at' || k === 'startDate' || k === 'endDate' || k === 'createdAt' ? undefined : x,
    );
  return strip({ usage, consumption, purchases, topups, analytics, bobs, userUsage, activity, byCost, byTokens }) as any;
}

const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
/** What left the balances for these lines (0, not -0, when nothing did). */
const spent = (lines: Array<{ delta: number }>) => 0 - sum(lines.map((l) => l.delta)) || 0;
const usd = (x: number) => Math.round(x * 1e10) / 1e10;

describe('the read side on every store, for one workload', () => {
  const opened: Array<{ name: string; store: OpenStore; rt: Runtime }> = [];
  beforeAll(async () => {
    for (const b of backends) {
      await b.setup?.();
      const store = await b.open('readside');
      opened.push({ name: b.name, store, rt: await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } }) });
    }
  });
  afterAll(async () => {
    for (const o of opened) {
      await o.rt.close();
      await o.store.cleanup();
    }
  });

  it('answers alike on every store, and every figure equals the sum of the ledger entries', async () => {
    const results: Record<string, any> = {};
    for (const o of opened) {
      await workload(o.rt);
      results[o.name] = await answers(o.rt);
    }
    expect(Object.keys(results)).toContain('memory');
    for (const [name, r] of Object.entries(results)) expect({ name, ...r }).toEqual({ ...results.memory, name });

    const rt = opened[0]!.rt;
    const r = results.memory;
    const entries = await rt.billing.ledger.entries(alice.sub);
    const calls = entries.filter(
      (e): e is LedgerEntry & { usage: NonNullable<LedgerEntry['usage']> } => e.kind === 'settle' || e.kind === 'byok_usage',
    );
    // Histories: every finished call once, newest first, across pages; nothing else.
    const history = r.usage.flatMap((p: any) => p.items);
    expect(history.map((u: any) => u.requestId)).toEqual(calls.map((e) => e.requestId).reverse());
    expect(r.activity.flatMap((p: any) => p.items)).toEqual(history);
    expect(r.usage.map((p: any) => p.items.length)).toEqual([4, 4, 4, 2]);
    expect(r.usage.at(-1).nextCursor).toBeUndefined();
    for (const [i, u] of history.entries()) {
      const e = calls[calls.length - 1 - i]!;
      expect(u).toMatchObject({ tokensUsed: e.usage.tokensUsed, tokensCharged: e.usage.tokensCharged, platformFee: e.usage.platformFee });
    }
    // What paid each call equals its reserve and settle lines (net), or 'byok' with no lines.
    const consumption = r.consumption.flatMap((p: any) => p.items);
    for (const c of consumption) {
      const lines = entries.filter((e) => e.requestId === c.requestId).flatMap((e) => e.lines);
      if (c.paidBy === 'byok') expect(lines).toEqual([]);
      else expect(sum(Object.values(c.paidBy as Record<string, number>))).toBe(spent(lines));
      expect(c.tokensCharged).toBe(spent(lines));
    }
    // Every token that left the balances is a call's charge: releases gave back what they held.
    expect(-sum(entries.filter((e) => e.kind !== 'credit').flatMap((e) => e.lines.map((l) => l.delta)))).toBe(
      sum(calls.map((e) => e.usage.tokensCharged)),
    );
    expect(r.purchases.flatMap((p: any) => p.items).map((p: any) => p.tokens)).toEqual([2_000, 50_000]);
    expect(r.topups.flatMap((p: any) => p.items).map((p: any) => p.tokens)).toEqual([2_000]);

    // Analytics: totals and breakdowns are sums of the ledger's calls.
    const totals = (es: typeof calls) => ({
      requests: es.length,
      tokensUsed: sum(es.map((e) => e.usage.tokensUsed)),
      tokensCharged: sum(es.map((e) => e.usage.tokensCharged)),
      platformFee: sum(es.map((e) => e.usage.platformFee)),
      estimatedCostUsd: usd(sum(es.map((e) => e.usage.estimatedCostUsd ?? 0))),
    });
    expect(r.analytics.totals).toEqual({
      ...totals(calls),
      platformRequests: calls.filter((e) => e.kind === 'settle').length,
      byokRequests: calls.filter((e) => e.kind === 'byok_usage').length,
    });
    const by = (key: (e: (typeof calls)[number]) => string) =>
      Object.fromEntries([...new Set(calls.map(key))].map((k) => [k, totals(calls.filter((e) => key(e) === k))]));
    expect(r.analytics.byProvider).toEqual(by((e) => e.usage.provider));
    expect(r.analytics.byModel).toEqual(by((e) => `${e.usage.provider}/${e.usage.model}`));
    expect(r.analytics.history).toEqual(history);
    expect(r.userUsage.totals).toEqual(r.analytics.totals);

    // Bob sees his own call only, with the part his balance could not cover left uncollected.
    expect(r.bobs.usage.map((u: any) => u.requestId)).toEqual(['b-over']);
    const [bobSettle] = (await rt.billing.ledger.entries(bob.sub)).filter((e) => e.kind === 'settle');
    expect(bobSettle!.usage).toMatchObject({ tokensUsed: 2_000, tokensCharged: 1_000, uncollected: 1_200 });

    // Across users: totals from every user's ledger; the top users are the exact ranking, bounded by limit.
    const everyone = [alice, bob, ...users];
    const perUser = await Promise.all(
      everyone.map(async (u) => ({
        userId: u.sub,
        calls: (await rt.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'settle' || e.kind === 'byok_usage') as typeof calls,
      })),
    );
    const all = perUser.flatMap((u) => u.calls);
    expect(r.byCost.totals).toMatchObject({ ...totals(all), activeUserDays: everyone.length });
    const platformCost = (es: typeof calls) => usd(sum(es.filter((e) => e.kind === 'settle').map((e) => e.usage.estimatedCostUsd ?? 0)));
    const rank = (score: (es: typeof calls) => number) =>
      perUser
        .map((u) => ({ userId: u.userId, score: score(u.calls), tokens: sum(u.calls.map((e) => e.usage.tokensUsed)) }))
        .sort((a, b) => b.score - a.score || b.tokens - a.tokens || a.userId.localeCompare(b.userId))
        .slice(0, 5)
        .map((u) => u.userId);
    expect(r.byCost.topUsers.map((u: any) => u.userId)).toEqual(rank(platformCost));
    expect(r.byTokens.topUsers.map((u: any) => u.userId)).toEqual(rank((es) => sum(es.map((e) => e.usage.tokensUsed))));
    for (const top of [...r.byCost.topUsers, ...r.byTokens.topUsers]) {
      const mine = perUser.find((u) => u.userId === top.userId)!.calls;
      expect(top).toMatchObject({ ...totals(mine), platformCostUsd: platformCost(mine) });
    }
  });
});
