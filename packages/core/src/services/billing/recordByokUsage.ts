import { requestIdV7 } from '../../lib/requestIdV7.js';
import type { TxWrite } from '../../kernel/Storage.js';
import { keySpendKey, recordKeyByok } from '../apiKeys/keySpend.js';
import { usageKeys, usageWrites } from './globalUsage.js';
import type { UsageRecordItem } from './history.js';
import { ledgerKeys, type Ledger } from './Ledger.js';
import type { ByokUsageParams } from './types.js';

/** How long a BYOK call's requestId is remembered for replays. */
const CLAIM_TTL_MS = 7 * 24 * 3600_000;

/**
 * One transaction: the ledger entry (no lines: the user's own key paid), the usage history item,
 * the user's and the cluster's day analytics rows, the API key's call and BYOK tokens when the
 * call came with one, and the requestId claim, so a replay records nothing twice. BYOK calls never
 * count against a budget (docs/billing.md#budgets), a key's included.
 *
 * Not durable (`durable: false`): no balance moves, so a crash of the store that loses the record
 * loses a line of history and analytics, never money; on PostgreSQL the call then does not wait
 * for a WAL flush (about 0.75 ms here, most of what the record costs the call).
 */
export function recordByokUsage(
  ledger: Ledger,
  userId: string,
  p: Omit<ByokUsageParams, 'identity'> & { apiKeyId?: string | undefined },
): Promise<boolean> {
  const requestId = p.requestId ?? requestIdV7();
  const claimKey = ledgerKeys.claim(userId, `byok:${requestId}`);
  const at = new Date();
  const day = at.toISOString().slice(0, 10);
  const dayKeys = usageKeys(userId, day);
  const keys = [claimKey, dayKeys.userDay, dayKeys.global];
  if (p.apiKeyId) keys.push(keySpendKey(p.apiKeyId));
  return ledger.storage.transact(
    keys,
    (read) => {
      if (read(claimKey)) return { writes: [], result: false };
      const tokensUsed = Math.max(0, Math.ceil(p.tokensUsed));
      const entry = ledger.newEntry(
        {
          kind: 'byok_usage',
          idempotencyKey: `byok:${requestId}`,
          ...(p.requestId ? { requestId } : {}),
          lines: [],
          usage: {
            tokensUsed,
            tokensCharged: 0,
            platformFee: 0,
            estimatedCostUsd: p.estimatedCostUsd,
            provider: p.provider,
            model: p.model,
            ...(p.metadata ? { metadata: p.metadata } : {}),
          },
        },
        at,
      );
      const item: UsageRecordItem = {
        id: entry.id,
        at: entry.at,
        ...(p.requestId ? { requestId } : {}),
        mode: 'byok',
        provider: p.provider,
        model: p.model,
        tokensUsed,
        tokensCharged: 0,
        platformFee: 0,
        estimatedCostUsd: p.estimatedCostUsd,
        ...(p.metadata ? { metadata: p.metadata } : {}),
        ...(p.apiKeyId ? { apiKeyId: p.apiKeyId } : {}),
        paidBy: 'byok',
      };
      const writes: TxWrite[] = [
        { op: 'set', key: claimKey, value: { at: entry.at }, ttlMs: CLAIM_TTL_MS },
        { op: 'append', log: ledgerKeys.log(userId), record: entry },
        { op: 'append', log: ledgerKeys.usage(userId), record: item },
        ...usageWrites(read, userId, day, item),
        ...(p.apiKeyId ? recordKeyByok(read, p.apiKeyId, tokensUsed, at) : []),
      ];
      return { writes, result: true };
    },
    { durable: false },
  );
}
