import { describe, expect, it } from 'vitest';
import type { TransactOptions, TxPlan, TxRead } from '../../kernel/Storage.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
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
});
