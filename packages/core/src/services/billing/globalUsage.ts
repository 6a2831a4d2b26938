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
 * - In each shard row, `top`: the shard's TOP_K users of the day by platform cost and by tokens,
 *   kept exact in the same transaction (a user's day figures only grow, so a user outside the list
 *   enters it only by passing its last entry). The console's ranking reads these lists and the
 *   ranked users' day rows: O(days x TOP_K), not the day's user list (adminUsageAnalytics.ts).
 */
export const GLOBAL_SHARDS = 16;

/** Users per shard, day and ranking kept in `top` (16 shards: 512 per day and ranking). */
export const TOP_K = 32;

/**
 * `[userId, score, then]`, best first: score desc, then `then` desc, then user id asc, the order
 * the ranking sorts by. Both figures only grow for a user within a day, so the pair does too.
 */
export type TopEntry = [string, number, number];

export interface TopLists {
  /** By platform cost in USD, then tokens (what `sortBy: 'cost'` ranks by). */
  cost: TopEntry[];
  /** By tokens used, platform and BYOK (`then` is 0). */
  tokens: TopEntry[];
}

export interface GlobalDay extends UsageDay {
  /** Users whose first call of the day landed in this shard. */
  users: number;
  /**
   * The shard's top users of the day. Absent on a row started by a release before the lists
   * (it is never added later, since the users counted before would be missing from it).
   */
  top?: TopLists;
}

/** True when `a` ranks before `b`. */
const before = (a: TopEntry, b: TopEntry) => a[1] > b[1] || (a[1] === b[1] && (a[2] > b[2] || (a[2] === b[2] && a[0] < b[0])));

/** `list` with `userId` at `score`, `then` (its figures only grow), at most TOP_K long; the same array when nothing changes. */
export function placeInTop(list: readonly TopEntry[], userId: string, score: number, then: number): TopEntry[] {
  const entry: TopEntry = [userId, score, then];
  const at = list.findIndex((e) => e[0] === userId);
  if (at === -1 && list.length >= TOP_K && !before(entry, list[list.length - 1]!)) return list as TopEntry[];
  if (at !== -1 && list[at]![1] === score && list[at]![2] === then) return list as TopEntry[];
  const next = at === -1 ? [...list] : list.filter((_, i) => i !== at);
  let i = next.findIndex((e) => before(entry, e));
  if (i === -1) i = next.length;
  next.splice(i, 0, entry);
  if (next.length > TOP_K) next.length = TOP_K;
  return next;
}

/** A user's day row's platform cost: the ranking's `cost` score. */
export const platformCostOf = (row: UsageDay): number => row.byMode?.platform.estimatedCostUsd ?? 0;

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
  const nextUser = addToDay(userDay, item);
  const nextGlobal: GlobalDay = { ...addToDay(global, item), users: (global?.users ?? 0) + (userDay ? 0 : 1) };
  // A row without lists was started by an earlier release: it stays without (see GlobalDay.top).
  const top = global ? global.top : { cost: [], tokens: [] };
  if (top)
    nextGlobal.top = {
      cost: placeInTop(top.cost, userId, platformCostOf(nextUser), nextUser.totals.tokensUsed),
      tokens: placeInTop(top.tokens, userId, nextUser.totals.tokensUsed, 0),
    };
  else delete nextGlobal.top;
  const writes: TxWrite[] = [
    { op: 'set', key: keys.userDay, value: nextUser, ttlMs: USAGE_DAY_TTL_MS },
    { op: 'set', key: keys.global, value: nextGlobal, ttlMs: USAGE_DAY_TTL_MS },
  ];
  if (!userDay) writes.push({ op: 'append', log: globalKeys.users(day), record: { userId } });
  return writes;
}
