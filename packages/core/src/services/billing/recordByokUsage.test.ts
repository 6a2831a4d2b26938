import { describe, expect, it } from 'vitest';
import type { TransactOptions, TxPlan, TxRead } from '../../kernel/Storage.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { keySpendKey, keyUsageView, type KeySpendRecord } from '../apiKeys/keySpend.js';
import { Ledger } from './Ledger.js';
import { recordByokUsage } from './recordByokUsage.js';

/** A memory store that remembers the options each transaction was sent with. */
class RecordingStorage extends MemoryStorage {
  readonly sent: Array<TransactOptions | undefined> = [];
  override transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>, opts?: TransactOptions): Promise<R> {
    this.sent.push(opts);
    return super.transact(keys, plan);
  }
}

describe('recordByokUsage', () => {
  it('writes the record in one non-durable transaction (no money moves), once per requestId', async () => {
    const storage = new RecordingStorage();
    const ledger = new Ledger(storage);
    const p = { provider: 'openai' as const, model: 'gpt-x', tokensUsed: 12, estimatedCostUsd: 0.001, requestId: 'r-1' };
    expect(await recordByokUsage(ledger, 'u1', p)).toBe(true);
    expect(await recordByokUsage(ledger, 'u1', p)).toBe(false);
    expect(storage.sent).toEqual([{ durable: false }, { durable: false }]);
    const { logs } = await ledger.storage.listLogs('', { limit: 10 });
    expect(logs.length).toBeGreaterThan(0);
  });

  it("a call through an API key counts as one of the key's calls and its tokens as the key's BYOK tokens, never as budget spend, once per requestId", async () => {
    const storage = new MemoryStorage();
    const ledger = new Ledger(storage);
    const p = { provider: 'openai' as const, model: 'gpt-x', tokensUsed: 40, estimatedCostUsd: 0.002, apiKeyId: 'key-1' };
    expect(await recordByokUsage(ledger, 'u1', { ...p, requestId: 'r-1' })).toBe(true);
    expect(await recordByokUsage(ledger, 'u1', { ...p, requestId: 'r-1' })).toBe(false);
    expect(await recordByokUsage(ledger, 'u1', { ...p, tokensUsed: 2, requestId: 'r-2' })).toBe(true);
    const view = keyUsageView(await storage.get<KeySpendRecord>(keySpendKey('key-1')), { day: { tokens: 10 } });
    expect(view.calls).toBe(2);
    for (const period of view.periods) {
      expect(period.spent, period.period).toEqual({ tokens: 0, usd: 0, byokTokens: 42 });
      expect(period.reserved, period.period).toEqual({ tokens: 0, usd: 0 });
    }
    expect(view.periods.find((x) => x.period === 'day')?.remaining.tokens).toBe(10);
    // Without a key nothing of a key's is written.
    await recordByokUsage(ledger, 'u1', { ...p, apiKeyId: undefined, requestId: 'r-3' });
    expect((await storage.get<KeySpendRecord>(keySpendKey('key-1')))?.calls).toBe(2);
  });
});
