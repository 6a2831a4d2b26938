import { describe, expect, it } from 'vitest';
import type { TxRead, TxWrite } from '../../kernel/Storage.js';
import { apiKeyKeys, type ApiKeyRecord } from './apiKeyTypes.js';
import { keySpendKey, keyUsageView, releaseKeySpend, reserveKeySpend, settleKeySpend, type KeySpendRecord } from './keySpend.js';

/** One key's records as its transactions read and write them, in memory (the arithmetic only: storage has its own suite). */
function keyStore(budget: ApiKeyRecord['budget']) {
  const rows = new Map<string, unknown>([
    [apiKeyKeys.record('k1'), { id: 'k1', revokedAt: null, expiresAt: null, budget } as ApiKeyRecord],
  ]);
  const read: TxRead = <T>(key: string) => structuredClone(rows.get(key)) as T | undefined;
  const apply = (writes: TxWrite[]) => {
    for (const w of writes) if (w.op === 'set') rows.set(w.key, structuredClone(w.value));
  };
  return { read, apply, spend: () => rows.get(keySpendKey('k1')) as KeySpendRecord };
}

const today = new Date('2026-04-01T00:10:00Z');
const yesterday = new Date('2026-03-31T23:55:00Z');
const worst = (tokens: number) => ({ tokens, usdNanos: 0 });

describe("an API key's budget when the clock is set back", () => {
  it("neither reopens yesterday's day nor forgets today's spend", () => {
    const s = keyStore({ day: { tokens: 1000 } });
    // Today the whole daily budget is spent.
    const first = reserveKeySpend(s.read, 'k1', worst(1000), today);
    s.apply(first.writes);
    s.apply(settleKeySpend(s.read, first.hold, { tokens: 1000, usdNanos: 0 }, today));
    // The clock steps back across midnight: before, "2026-03-31" started afresh, a whole budget again.
    expect(() => reserveKeySpend(s.read, 'k1', worst(100), yesterday)).toThrow(/daily token budget/);
    expect(s.spend().day).toMatchObject({ id: '2026-04-01', tokens: 1000 });
    expect(keyUsageView(s.spend(), { day: { tokens: 1000 } }, yesterday).periods[0]).toMatchObject({
      periodId: '2026-04-01',
      remaining: { tokens: 0 },
    });
  });

  it('a call reserved today and settled or released while the clock reads yesterday counts in today', () => {
    const s = keyStore({ day: { tokens: 1000 } });
    const a = reserveKeySpend(s.read, 'k1', worst(100), today);
    s.apply(a.writes);
    s.apply(settleKeySpend(s.read, a.hold, { tokens: 60, usdNanos: 0 }, yesterday));
    expect(s.spend().day).toMatchObject({ id: '2026-04-01', tokens: 60, reservedTokens: 0 });
    const b = reserveKeySpend(s.read, 'k1', worst(100), today);
    s.apply(b.writes);
    s.apply(releaseKeySpend(s.read, b.hold, yesterday));
    expect(s.spend().day).toMatchObject({ id: '2026-04-01', tokens: 60, reservedTokens: 0 });
    // The clock's return finds today's figures where they were.
    expect(() => reserveKeySpend(s.read, 'k1', worst(941), today)).toThrow(/daily token budget/);
    expect(reserveKeySpend(s.read, 'k1', worst(940), today).hold.day).toBe('2026-04-01');
  });

  it('a day a clock far ahead recorded is not believed: the daily budget is not stuck there', () => {
    const s = keyStore({ day: { tokens: 1000 } });
    const far = new Date('2029-06-15T12:00:00Z');
    const a = reserveKeySpend(s.read, 'k1', worst(1000), far);
    s.apply(a.writes);
    s.apply(settleKeySpend(s.read, a.hold, { tokens: 1000, usdNanos: 0 }, far));
    const b = reserveKeySpend(s.read, 'k1', worst(100), today);
    expect(b.hold).toMatchObject({ day: '2026-04-01', month: '2026-04' });
  });
});
