import { describe, expect, it } from 'vitest';
import {
  previewSpend,
  releaseSpend,
  reserveSpend,
  resetsAt,
  settleSpend,
  toNanos,
  type EffectiveBudget,
  type SpendRecord,
} from './periodSpend.js';

const day1 = new Date('2026-03-31T23:59:00Z');
const day2 = new Date('2026-04-01T00:01:00Z');
const tokensDaily: EffectiveBudget = { daily: { tokens: 1000, thresholds: [0.5, 0.8], source: 'user' } };

describe('period spend arithmetic', () => {
  it('refuses a worst case that would take spent + reserved over the limit, and accepts one that fits exactly', () => {
    const a = reserveSpend(undefined, tokensDaily, { tokens: 600, usdNanos: 0 }, day1);
    if (!a.ok) throw new Error('refused');
    expect(a.spend.daily).toMatchObject({ id: '2026-03-31', reservedTokens: 600, tokens: 0 });
    const b = reserveSpend(a.spend, tokensDaily, { tokens: 401, usdNanos: 0 }, day1);
    expect(b.ok).toBe(false);
    if (b.ok) return;
    expect(b.refusal).toEqual({
      period: 'daily',
      periodId: '2026-03-31',
      metric: 'tokens',
      limit: 1000,
      spent: 0,
      reserved: 600,
      requested: 401,
      resetsAt: '2026-04-01T00:00:00.000Z',
      reason: 'budget_exceeded',
    });
    expect(reserveSpend(a.spend, tokensDaily, { tokens: 400, usdNanos: 0 }, day1).ok).toBe(true);
  });

  it('the preview answers what the reservation would, for every worst case around the limit, and holds nothing', () => {
    const money: EffectiveBudget = {
      daily: { tokens: 1000, thresholds: [0.8], source: 'user' },
      monthly: { usd: 0.01, thresholds: [0.8], source: 'default' },
    };
    const a = reserveSpend(undefined, money, { tokens: 600, usdNanos: 4_000_000 }, day1);
    if (!a.ok) throw new Error('refused');
    const stored = structuredClone(a.spend);
    for (const worst of [
      { tokens: 399, usdNanos: 1_000_000 },
      { tokens: 400, usdNanos: 6_000_000 },
      { tokens: 401, usdNanos: 0 },
      { tokens: 10, usdNanos: 6_000_001 },
      { tokens: 10, usdNanos: null },
    ]) {
      const held = reserveSpend(a.spend, money, worst, day1);
      expect(previewSpend(a.spend, money, worst, day1)).toEqual(held.ok ? null : held.refusal);
    }
    expect(a.spend).toEqual(stored);
    // A new day: the daily figures start again for the preview as for the reservation.
    expect(previewSpend(a.spend, money, { tokens: 1000, usdNanos: 0 }, day2)).toBeNull();
  });

  it('settle replaces the hold with the actual; release removes it', () => {
    const a = reserveSpend(undefined, tokensDaily, { tokens: 600, usdNanos: 5 }, day1);
    if (!a.ok) throw new Error('refused');
    const settled = settleSpend(a.spend, tokensDaily, a.hold, { tokens: 200, usdNanos: 3 }, day1).spend;
    expect(settled.daily).toMatchObject({ tokens: 200, reservedTokens: 0, usdNanos: 3, reservedUsdNanos: 0 });
    expect(settled.monthly).toMatchObject({ id: '2026-03', tokens: 200, usdNanos: 3 });
    const b = reserveSpend(settled, tokensDaily, { tokens: 300, usdNanos: 0 }, day1);
    if (!b.ok) throw new Error('refused');
    expect(releaseSpend(b.spend, b.hold, day1).daily).toMatchObject({ tokens: 200, reservedTokens: 0 });
  });

  it('sends each threshold once per period: crossings are listed the first time only, both at once when one charge passes both', () => {
    let spend: SpendRecord | undefined;
    const charge = (tokens: number, at = day1) => {
      const r = reserveSpend(spend, tokensDaily, { tokens, usdNanos: 0 }, at);
      if (!r.ok) throw new Error('refused');
      const s = settleSpend(r.spend, tokensDaily, r.hold, { tokens, usdNanos: 0 }, at);
      spend = s.spend;
      return s.crossings.map((c) => c.threshold);
    };
    expect(charge(499)).toEqual([]);
    expect(charge(1)).toEqual([0.5]);
    expect(charge(10)).toEqual([]);
    expect(charge(400)).toEqual([0.8]);
    expect(charge(10)).toEqual([]);
    // A new day starts from zero: the thresholds can be reached again.
    expect(charge(900, day2)).toEqual([0.5, 0.8]);
  });

  it('a call reserved before midnight is charged to its own day, not the new one', () => {
    const a = reserveSpend(undefined, tokensDaily, { tokens: 900, usdNanos: 0 }, day1);
    if (!a.ok) throw new Error('refused');
    // Another call opens the new day (and the new month) before the first one settles.
    const b = reserveSpend(a.spend, tokensDaily, { tokens: 900, usdNanos: 0 }, day2);
    if (!b.ok) throw new Error('refused');
    expect(b.spend.daily).toMatchObject({ id: '2026-04-01', reservedTokens: 900 });
    const late = settleSpend(b.spend, tokensDaily, a.hold, { tokens: 900, usdNanos: 0 }, day2).spend;
    expect(late.daily).toMatchObject({ id: '2026-04-01', tokens: 0, reservedTokens: 900 });
    expect(late.monthly).toMatchObject({ id: '2026-04', tokens: 0, reservedTokens: 900 });
  });

  it('money limits: exact in nano-dollars, rounded up; an unpriced model cannot run under a money limit', () => {
    expect(toNanos(0.000123)).toBe(123_000);
    expect(toNanos(0.0000001)).toBe(100);
    expect(toNanos(0.0000000001)).toBe(1);
    expect(toNanos(0.1 + 0.2)).toBe(300_000_000);
    const usd: EffectiveBudget = { monthly: { usd: 1, thresholds: [0.8], source: 'default' } };
    const a = reserveSpend(undefined, usd, { tokens: 10, usdNanos: 999_999_000 }, day1);
    expect(a.ok).toBe(true);
    if (!a.ok) return;
    const b = reserveSpend(a.spend, usd, { tokens: 10, usdNanos: 2000 }, day1);
    expect(!b.ok && b.refusal).toMatchObject({
      period: 'monthly',
      metric: 'usd',
      limit: 1,
      reserved: 0.999999,
      requested: 0.000002,
      resetsAt: '2026-04-01T00:00:00.000Z',
    });
    const unpriced = reserveSpend(undefined, usd, { tokens: 10, usdNanos: null }, day1);
    expect(!unpriced.ok && unpriced.refusal).toMatchObject({ reason: 'model_not_priced', requested: null });
    // Without a money limit an unpriced model is fine.
    expect(reserveSpend(undefined, tokensDaily, { tokens: 10, usdNanos: null }, day1).ok).toBe(true);
  });

  it('resets at the next UTC day or month', () => {
    expect(resetsAt('monthly', '2026-12')).toBe('2027-01-01T00:00:00.000Z');
    expect(resetsAt('daily', '2028-02-28')).toBe('2028-02-29T00:00:00.000Z');
  });

  it("a money limit of exactly N calls' cost admits N calls, however the cost falls between micro-dollars", () => {
    const cost = 0.00012125; // 135 tokens of a real call: not a whole micro-dollar
    const usd: EffectiveBudget = { daily: { usd: 3 * cost, thresholds: [], source: 'user' } };
    let spend: SpendRecord | undefined;
    for (let i = 0; i < 3; i++) {
      const r = reserveSpend(spend, usd, { tokens: 135, usdNanos: toNanos(cost) }, day1);
      if (!r.ok) throw new Error(`call ${i} refused: ${JSON.stringify(r.refusal)}`);
      spend = settleSpend(r.spend, usd, r.hold, { tokens: 135, usdNanos: toNanos(cost) }, day1).spend;
    }
    expect(reserveSpend(spend, usd, { tokens: 135, usdNanos: toNanos(cost) }, day1).ok).toBe(false);
  });

  it('reads a period written in micro-dollars (before nano-dollars) in nano-dollars', () => {
    const legacy = {
      daily: { id: '2026-03-31', tokens: 10, usdMicros: 7, reservedTokens: 5, reservedUsdMicros: 3, alerted: [] },
    } as unknown as SpendRecord;
    const r = reserveSpend(legacy, { daily: { usd: 0.0001, thresholds: [], source: 'user' } }, { tokens: 1, usdNanos: 1 }, day1);
    if (!r.ok) throw new Error('refused');
    expect(r.spend.daily).toMatchObject({ usdNanos: 7000, reservedUsdNanos: 3001 });
    expect(r.spend.daily).not.toHaveProperty('usdMicros');
    const released = releaseSpend(r.spend, { daily: '2026-03-31', monthly: '2026-03', tokens: 5, usdMicros: 3 } as never, day1);
    expect(released.daily).toMatchObject({ reservedUsdNanos: 1, reservedTokens: 1 });
  });

  it('a clock set back across midnight (or an instance whose clock is behind) neither reopens the day nor forgets it', () => {
    // Today (day 2) the whole daily budget is spent.
    const spent = settleSpend(undefined, tokensDaily, undefined, { tokens: 1000, usdNanos: 0 }, day2).spend;
    // The clock steps back to yesterday: before, "2026-03-31" started afresh at zero, a whole budget again.
    const back = reserveSpend(spent, tokensDaily, { tokens: 100, usdNanos: 0 }, day1);
    expect(back.ok).toBe(false);
    if (back.ok) return;
    expect(back.refusal).toMatchObject({ periodId: '2026-04-01', spent: 1000 });
    // A call reserved today and settled while the clock reads yesterday is charged to today, and
    // the clock's return finds today's figures where they were.
    const r = reserveSpend(undefined, tokensDaily, { tokens: 100, usdNanos: 0 }, day2);
    if (!r.ok) throw new Error('refused');
    const settled = settleSpend(r.spend, tokensDaily, r.hold, { tokens: 60, usdNanos: 0 }, day1).spend;
    expect(settled.daily).toMatchObject({ id: '2026-04-01', tokens: 60, reservedTokens: 0 });
    expect(previewSpend(settled, tokensDaily, { tokens: 941, usdNanos: 0 }, day2)).toMatchObject({ periodId: '2026-04-01', spent: 60 });
    expect(releaseSpend(settled, undefined, day1).daily).toMatchObject({ id: '2026-04-01', tokens: 60 });
  });

  it('a record a clock far ahead wrote (beyond the next period) is not believed: the budget is not stuck in that period', () => {
    // One instance whose clock read 2029 for a while (a VM resumed with a wrong clock) spent the day.
    const far = new Date('2029-06-15T12:00:00Z');
    const spent = settleSpend(undefined, tokensDaily, undefined, { tokens: 1000, usdNanos: 0 }, far).spend;
    expect(spent.daily).toMatchObject({ id: '2029-06-15', tokens: 1000 });
    // Before, every later call counted in "2029-06-15" until 2029: the daily budget never reset.
    const r = reserveSpend(spent, tokensDaily, { tokens: 100, usdNanos: 0 }, day2);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.spend.daily).toMatchObject({ id: '2026-04-01', tokens: 0, reservedTokens: 100 });
    expect(r.spend.monthly).toMatchObject({ id: '2026-04' });
    // A record one period ahead (a clock behind across midnight, within a day) is still believed.
    const today = settleSpend(undefined, tokensDaily, undefined, { tokens: 1000, usdNanos: 0 }, day2).spend;
    expect(reserveSpend(today, tokensDaily, { tokens: 1, usdNanos: 0 }, day1).ok).toBe(false);
  });
});
