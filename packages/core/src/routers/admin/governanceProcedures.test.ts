import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Storage } from '../../kernel/Storage.js';
import { adminUsageAnalytics } from '../../services/billing/adminUsageAnalytics.js';
import { admin, alice, bob, call, makeRuntime } from '../../services/billing/__tests__/kit.js';
import { rememberUser } from '../../services/directory/userIndex.js';
import type { Identity } from '../../kernel/identity.js';

const carol: Identity = { ...bob, sub: 'user-carol', email: 'carol@example.com' };
const today = new Date().toISOString().slice(0, 10);

/** A memory store that records which logs were read (analytics must not read any user's ledger or usage log). */
function recordingStore(): { storage: Storage; logsRead: string[] } {
  const mem = new MemoryStorage();
  const logsRead: string[] = [];
  const storage = new Proxy(mem, {
    get(target, prop) {
      if (prop === 'readLog') return (log: string, opts?: object) => (logsRead.push(log), target.readLog(log, opts));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { storage, logsRead };
}

describe('admin budgets and usage analytics', () => {
  let rt: Runtime;
  let logsRead: string[];
  beforeEach(async () => {
    const rec = recordingStore();
    logsRead = rec.logsRead;
    rt = await makeRuntime(rec.storage, { billing: { platformFeeRate: 0.1 } });
  });
  afterEach(() => rt.close());

  /** A settled platform call: `used` tokens at `costUsd`. */
  async function platformCall(who: Identity, provider: string, model: string, used: number, costUsd: number) {
    const r = await rt.billing.reserve({ identity: who, tokens: used, requestId: `${who.sub}-${Math.random()}`, costUsd });
    await rt.billing.settle(r, { tokensUsed: used, provider, model, costUsd });
  }

  it('setBudget / getBudget / removeBudget resolve users by id or e-mail; the user reads the same through billing.getBudget', async () => {
    await rememberUser(rt.storage, alice);
    const set = await call(
      rt,
      'admin.setBudget',
      { userId: 'Alice@Example.com', period: 'monthly', tokens: 5000, usd: 2.5, thresholds: [0.9, 0.5] },
      admin,
    );
    expect(set.userId).toBe(alice.sub);
    expect(set.periods[1]).toMatchObject({
      period: 'monthly',
      source: 'user',
      limits: { tokens: 5000, usd: 2.5 },
      thresholds: [0.5, 0.9],
      spent: { tokens: 0, usd: 0 },
    });
    await rt.billing.credit({ userId: alice.sub, tokens: 100_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await platformCall(alice, 'openai', 'gpt-5-mini', 1000, 0.25);
    const own = await call(rt, 'billing.getBudget', undefined, alice);
    expect(own.periods[1]).toMatchObject({ spent: { tokens: 1000, usd: 0.25 }, remaining: { tokens: 4000, usd: 2.25 } });
    expect(await call(rt, 'admin.getBudget', { userId: alice.sub }, admin)).toEqual(own);
    // Over the limit: refused with the figures a client needs.
    const refused = await rt.billing
      .reserve({ identity: alice, tokens: 4001, requestId: 'too-big', costUsd: 0.01 })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
      details: { period: 'monthly', metric: 'tokens', limit: 5000, spent: 1000, resetsAt: own.periods[1].resetsAt },
    });
    const removed = await call(rt, 'admin.removeBudget', { userId: alice.sub }, admin);
    expect(removed).toMatchObject({ removed: true, budget: { periods: [{ source: null }, { source: null }] } });
    expect((await call(rt, 'admin.removeBudget', { userId: alice.sub }, admin)).removed).toBe(false);
  });

  it('refuses non-administrators, unknown e-mails and bad limits', async () => {
    await expect(call(rt, 'admin.setBudget', { userId: alice.sub, period: 'daily', tokens: 1 }, alice)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    await expect(call(rt, 'admin.usageAnalytics', {}, alice)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(call(rt, 'admin.getBudget', { userId: 'nobody@example.com' }, admin)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(call(rt, 'admin.setBudget', { userId: alice.sub, period: 'weekly', tokens: 1 }, admin)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(call(rt, 'admin.setBudget', { userId: alice.sub, period: 'daily', thresholds: [1.5] }, admin)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(call(rt, 'admin.usageAnalytics', { from: '2025-01-01', to: '2026-06-01' }, admin)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(call(rt, 'admin.usageAnalytics', { from: '2026-02-02', to: '2026-02-01' }, admin)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    // Days past their month's end are refused, not rolled over into the next month's first days.
    for (const [from, to] of [
      ['2026-02-28', '2026-02-30'],
      ['2026-02-29', '2026-03-01'],
      ['2026-04-31', '2026-05-01'],
      ['2026-01-01', '2026-01-32'],
    ])
      await expect(call(rt, 'admin.usageAnalytics', { from, to }, admin)).rejects.toMatchObject({
        code: 'BAD_REQUEST',
        message: expect.stringContaining('not a calendar day'),
      });
    expect((await call(rt, 'admin.usageAnalytics', { from: '2028-02-28', to: '2028-02-29', groupBy: 'day' }, admin)).period).toEqual({
      from: '2028-02-28',
      to: '2028-02-29',
      days: 2,
    });
  });

  it('usageAnalytics: totals, providers, models and top users by cost or tokens, from day rows only, bounded by limit', async () => {
    for (const u of [alice, bob, carol])
      await rt.billing.credit({ userId: u.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: `seed-${u.sub}`, source: 'test' });
    await platformCall(alice, 'openai', 'gpt-5-mini', 1000, 0.5);
    await platformCall(alice, 'openai', 'gpt-5-mini', 1000, 0.5);
    await platformCall(bob, 'anthropic', 'claude-sonnet-4-5', 5000, 0.1);
    await platformCall(carol, 'anthropic', 'claude-haiku-4-5', 100, 0.01);
    // BYOK: counted in usage, never in platform cost.
    await rt.billing.recordByokUsage({
      identity: carol,
      provider: 'google',
      model: 'gemini-2.5-flash',
      tokensUsed: 20_000,
      estimatedCostUsd: 3,
    });
    logsRead.length = 0;

    const all = await call(rt, 'admin.usageAnalytics', { days: 7 }, admin);
    expect(all.period).toMatchObject({ to: today, days: 7 });
    expect(all.totals).toMatchObject({
      requests: 5,
      tokensUsed: 27_100,
      platformRequests: 4,
      byokRequests: 1,
      platformCostUsd: 1.11,
      byokCostUsd: 3,
      estimatedCostUsd: 4.11,
      activeUserDays: 3,
    });
    expect(all.byDay).toEqual([expect.objectContaining({ date: today, requests: 5, activeUsers: 3 })]);
    expect(all.byProvider.map((p: { provider: string }) => p.provider)).toEqual(['google', 'openai', 'anthropic']);
    expect(all.byModel[0]).toMatchObject({ model: 'google/gemini-2.5-flash', tokensUsed: 20_000 });
    // Top users by platform cost: alice (1.00), bob (0.10), carol (0.01 platform; her BYOK 3 USD is hers).
    expect(all.topUsers.map((u: { userId: string }) => u.userId)).toEqual([alice.sub, bob.sub, carol.sub]);
    expect(all.topUsers[0]).toMatchObject({ requests: 2, tokensUsed: 2000, platformCostUsd: 1 });
    const byTokens = await call(rt, 'admin.usageAnalytics', { groupBy: 'user', sortBy: 'tokens', limit: 2 }, admin);
    expect(byTokens.topUsers.map((u: { userId: string }) => u.userId)).toEqual([carol.sub, bob.sub]);
    expect(byTokens).not.toHaveProperty('byProvider');
    // Only maintained rows (the shards' top lists and the ranked users' day rows): no log at all.
    expect(logsRead).toEqual([]);

    const before = await call(rt, 'admin.usageAnalytics', { from: '2026-01-01', to: '2026-01-31', groupBy: 'day' }, admin);
    expect(before).toMatchObject({ period: { days: 31 }, totals: { requests: 0 }, byDay: [] });
  });

  it('the user ranking stops at maxUserDays and says so', async () => {
    for (const u of [alice, bob, carol])
      await rt.billing.recordByokUsage({ identity: u, provider: 'openai', model: 'm', tokensUsed: 10, estimatedCostUsd: 0 });
    const r = await adminUsageAnalytics(rt.storage, {
      from: today,
      to: today,
      groupBy: 'user',
      sortBy: 'tokens',
      limit: 10,
      maxUserDays: 2,
    });
    expect(r.truncated).toBe(true);
    expect(r.topUsers).toHaveLength(2);
    expect(r.totals.activeUserDays).toBe(3); // totals come from the global rows, never truncated
  });
});
