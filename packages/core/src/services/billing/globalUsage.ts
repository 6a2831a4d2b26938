import { createHash } from 'node:crypto';
import type { TxRead, TxWrite } from '../../kernel/Storage.js';
import { addToDay, USAGE_DAY_TTL_MS, type UsageDay, type UsageItem } from './history.js';
import { ledgerKeys } from './Ledger.js';

/**
 * Cluster-wide usage per UTC day, written in the same transaction that records a call, so admin
 * analytics read a few maintained rows instead of any user's ledger.
 *
 * - `usageglobal:<day>:<shard>`: totals by provider and model of the users hashed to that shard.
 *   The day is split in GLOBAL_SHARDS rows so concurrent calls of different users rarely touch the
 *   same row (one row would serialise every call of the cluster); a reader sums the shards.
 * - `usageusers:<day>` (a log): each user once, appended by the user's first call of the day (the
 *   transaction sees that user's day row absent), so the users of a day are listed from an index.
 */
export const GLOBAL_SHARDS = 16;

export interface GlobalDay extends UsageDay {
  /** Users whose first call of the day landed in this shard. */
  users: number;
}

export const globalKeys = {
  day: (day: string, shard: number) => `usageglobal:${day}:${shard}`,
  users: (day: string) => `usageusers:${day}`,
};

/**
 * Shards of recent users: every metered or BYOK call needs its user's shard twice (declared keys,
 * then the writes), and a SHA-1 per lookup showed in the gateway's CPU profile. Bounded: emptied
 * when full, so it holds at most SHARD_CACHE_SIZE user ids.
 */
const SHARD_CACHE_SIZE = 10_000;
const shardCache = new Map<string, number>();

export function shardOf(userId: string): number {
  let shard = shardCache.get(userId);
  if (shard === undefined) {
    shard = createHash('sha1').update(userId).digest().readUInt32BE(0) % GLOBAL_SHARDS;
    if (shardCache.size >= SHARD_CACHE_SIZE) shardCache.clear();
    shardCache.set(userId, shard);
  }
  return shard;
}

/** The keys a recording transaction must declare besides its own. */
export function usageKeys(userId: string, day: string): { userDay: string; global: string } {
  return { userDay: ledgerKeys.usageDay(userId, day), global: globalKeys.day(day, shardOf(userId)) };
}

/** Writes that record `item` in the user's day row, the global row and (first call of the day) the day's user list. */
export function usageWrites(read: TxRead, userId: string, day: string, item: UsageItem): TxWrite[] {
  const keys = usageKeys(userId, day);
  const userDay = read<UsageDay>(keys.userDay);
  const global = read<GlobalDay>(keys.global);
  const nextGlobal: GlobalDay = { ...addToDay(global, item), users: (global?.users ?? 0) + (userDay ? 0 : 1) };
  const writes: TxWrite[] = [
    { op: 'set', key: keys.userDay, value: addToDay(userDay, item), ttlMs: USAGE_DAY_TTL_MS },
    { op: 'set', key: keys.global, value: nextGlobal, ttlMs: USAGE_DAY_TTL_MS },
  ];
  if (!userDay) writes.push({ op: 'append', log: globalKeys.users(day), record: { userId } });
  return writes;
}
