import { isDeepStrictEqual } from 'node:util';
import { ledgerKeys, type AuditReport, type Claim, type Ledger } from './Ledger.js';
import { FINISHED_PREFIX, RESERVATION_PREFIX, type ReservationRecord } from './Reservations.js';
import type { LedgerEntry } from './types.js';

export interface ReconcileReport extends AuditReport {
  /** Entries a claim or reservation record held but the log missed (appended now). */
  repaired: number;
  /** Stale 'pending'/'closing' records whose balance change never happened (cleared now). */
  cleared: number;
}

type AnyRecord = Claim | ReservationRecord;

/**
 * Repair one user's ledger after a storage outage. Every operation writes its entries into its
 * claim or reservation record before appending them to the log, so an entry the log lacks can be
 * appended from there. A record still 'pending' (or 'closing') long after it started either
 * changed a balance or not: when the balances already equal the ledger sums it did not, and the
 * record is cleared so the operation can be retried (a 'closing' hold goes back to 'held').
 * Anything else stays inconsistent in the report for an operator. Only records older than
 * `staleMs` (default one minute) are touched, so calls in flight are left alone.
 */
export async function reconcile(ledger: Ledger, userId: string, opts: { staleMs?: number } = {}): Promise<ReconcileReport> {
  const storage = ledger.storage;
  const cutoff = Date.now() - (opts.staleMs ?? 60_000);
  const known = new Set((await ledger.entries(userId)).map((e) => e.id));
  const keys = [
    ...(await storage.keys(ledgerKeys.claimPrefix(userId))),
    ...(await storage.keys(`${RESERVATION_PREFIX}${encodeURIComponent(userId)}:`)),
    ...(await storage.keys(`${FINISHED_PREFIX}${encodeURIComponent(userId)}:`)),
  ];
  const missing = new Map<string, LedgerEntry>();
  const stale: Array<{ key: string; rec: AnyRecord }> = [];
  for (const key of keys) {
    const rec = await storage.get<AnyRecord>(key);
    if (!rec || Date.parse(rec.at) > cutoff) continue;
    if ('entries' in rec) for (const e of rec.entries) if (!known.has(e.id)) missing.set(e.id, e);
    if (rec.state === 'pending' || rec.state === 'closing') stale.push({ key, rec });
  }
  for (const e of [...missing.values()].sort((a, b) => a.at.localeCompare(b.at))) {
    await ledger.append(userId, e);
    known.add(e.id);
  }
  const audit = await ledger.audit(userId);
  let cleared = 0;
  for (const { key, rec } of stale) {
    // A call that finished but could not drop its open record: the finished record is the truth.
    if (key.startsWith(RESERVATION_PREFIX) && (await storage.get(FINISHED_PREFIX + key.slice(RESERVATION_PREFIX.length))) !== undefined) {
      if (await storage.delete(key)) cleared++;
      continue;
    }
    if (!audit.consistent) continue;
    if (rec.state === 'closing') {
      if (await storage.compareAndSet<AnyRecord>(key, rec, { ...rec, state: 'held' })) cleared++;
    } else if (isDeepStrictEqual(await storage.get(key), rec) && (await storage.delete(key))) {
      cleared++;
    }
  }
  return { ...audit, repaired: missing.size, cleared };
}
