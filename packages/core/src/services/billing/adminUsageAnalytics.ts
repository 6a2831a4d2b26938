import type { Storage } from '../../kernel/Storage.js';
import { cachedAnswer, getChunked, recentAnswer, rememberAnswer, shardRows, usageRecordedMark, versionsOf } from './adminAnalyticsCache.js';
import { GLOBAL_SHARDS, globalKeys, type GlobalDay, shardOf, TOP_K } from './globalUsage.js';
import { add, zero, type Totals, type UsageDay } from './history.js';
import { ledgerKeys } from './Ledger.js';

/**
 * Usage across users for administrators, from maintained rows only: per day the GLOBAL_SHARDS
 * global rows (providers, models, totals, and each shard's top users) and, for the user ranking,
 * the ranked users' day rows. No ledger or usage log of any user is read, and the cost does not
 * grow with the number of users a day: see rankFromTop. Only a range with days written by a release
 * before the top lists (or a ranking the lists cannot prove, see there) reads each day's user list.
 */

export type UsageGroup = 'user' | 'provider' | 'model' | 'day';

export interface AdminAnalyticsOptions {
  /** First and last UTC day, inclusive (`YYYY-MM-DD`). */
  from: string;
  to: string;
  /** Only this grouping (default: all four). */
  groupBy?: UsageGroup | undefined;
  /** Rank providers, models and users by money or tokens. */
  sortBy: 'cost' | 'tokens';
  /** Rows per grouping (days are never cut: the range bounds them). */
  limit: number;
  /** Most user-day rows read for the user ranking; past it the ranking is marked truncated. Default 50,000. */
  maxUserDays?: number;
  /** Also each ranked provider's and model's totals per day (`seriesByProvider`, `seriesByModel`), from the same rows. */
  series?: boolean;
}

/** Totals split by payer: platform-paid money is what budgets and the operator care about. */
export interface SplitTotals extends Totals {
  platformRequests: number;
  byokRequests: number;
  platformCostUsd: number;
  byokCostUsd: number;
}

export interface AdminAnalytics {
  period: { from: string; to: string; days: number };
  totals: SplitTotals & { activeUserDays: number };
  byDay?: Array<{ date: string; activeUsers: number } & SplitTotals>;
  byProvider?: Array<{ provider: string } & Totals>;
  byModel?: Array<{ model: string } & Totals>;
  topUsers?: Array<{ userId: string } & SplitTotals>;
  /** The user ranking read only the first `maxUserDays` user-day rows. */
  truncated?: boolean;
  /** With `series`: totals per day of the period (every day, in order) of each ranked provider and model. */
  seriesByProvider?: Array<{ provider: string; byDay: Totals[] }>;
  seriesByModel?: Array<{ model: string; byDay: Totals[] }>;
}

const DAY_MS = 86_400_000;
/** Keys per getMany round trip. */
const CHUNK = 1000;

export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

const splitZero = (): SplitTotals => ({ ...zero(), platformRequests: 0, byokRequests: 0, platformCostUsd: 0, byokCostUsd: 0 });

const round = (usd: number) => Math.round(usd * 1e10) / 1e10;

function addSplit(t: SplitTotals, u: SplitTotals): void {
  add(t, u);
  t.platformRequests += u.platformRequests;
  t.byokRequests += u.byokRequests;
  t.platformCostUsd = round(t.platformCostUsd + u.platformCostUsd);
  t.byokCostUsd = round(t.byokCostUsd + u.byokCostUsd);
}

/** A day row's totals split by payer (rows written before costs were recorded count as 0 USD). */
const splitOf = (row: UsageDay): SplitTotals => ({
  ...row.totals,
  platformCostUsd: row.byMode?.platform.estimatedCostUsd ?? 0,
  byokCostUsd: row.byMode?.byok.estimatedCostUsd ?? 0,
});

function top<T extends Totals>(rows: Array<[string, T]>, sortBy: 'cost' | 'tokens', limit: number): Array<[string, T]> {
  const score = (t: T) =>
    sortBy === 'cost' ? ('platformCostUsd' in t ? (t as unknown as SplitTotals).platformCostUsd : t.estimatedCostUsd) : t.tokensUsed;
  return rows.sort((a, b) => score(b[1]) - score(a[1]) || b[1].tokensUsed - a[1].tokensUsed || a[0].localeCompare(b[0])).slice(0, limit);
}

/** Users who made a call on `day`, from the day's user list (an index read, paged). */
async function usersOf(storage: Storage, day: string, budget: number): Promise<string[]> {
  const users: string[] = [];
  let after = 0;
  while (users.length < budget) {
    const page = await storage.readLog<{ userId: string }>(globalKeys.users(day), { after, limit: Math.min(CHUNK, budget - users.length) });
    for (const e of page) users.push(e.record.userId);
    if (page.length === 0 || page.length < CHUNK) break;
    after = page.at(-1)!.seq;
  }
  return users;
}

type Ranked = { rows: Array<{ userId: string } & SplitTotals>; truncated: boolean };

/**
 * Each user's totals over `days`, from their day rows: every day of `days`, or with `daysOf` only
 * the days on which the user can have a row (the others are known empty and not read).
 */
async function totalsOf(
  storage: Storage,
  users: string[],
  days: string[],
  daysOf: (user: string) => number[] = () => days.map((_, d) => d),
): Promise<Map<string, SplitTotals>> {
  const wanted = users.map((u) => daysOf(u));
  const rows = await getChunked<UsageDay>(
    storage,
    users.flatMap((u, i) => wanted[i]!.map((d) => ledgerKeys.usageDay(u, days[d]!))),
  );
  const out = new Map<string, SplitTotals>();
  let at = 0;
  users.forEach((u, i) => {
    const t = splitZero();
    for (const _ of wanted[i]!) {
      const row = rows[at++];
      if (row) addSplit(t, splitOf(row));
    }
    if (t.requests > 0) out.set(u, t);
  });
  return out;
}

/** A ranking figure: [score, then], compared in that order (TopEntry's order without the id). */
type Pair = [number, number];
const pairOf = (t: SplitTotals, sortBy: 'cost' | 'tokens'): Pair =>
  sortBy === 'cost' ? [t.platformCostUsd, t.tokensUsed] : [t.tokensUsed, 0];
const atLeast = (a: Pair, b: Pair) => a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]);
/** Sums rounded as addSplit rounds costs, so a bound and the exact total of the same rows compare equal. */
const plus = (a: Pair, b: Pair): Pair => [round(a[0] + b[0]), a[1] + b[1]];
const minus = (a: Pair, b: Pair): Pair => [round(a[0] - b[0]), a[1] - b[1]];
const ZERO: Pair = [0, 0];

/**
 * The ranking from the shards' top lists (threshold algorithm). A listed user's figures on a day
 * are known. An unlisted user of a full list ranked below its last entry that day (score at most
 * the last's, and when equal, `then` at most the last's), and of a list not full had no call that
 * day (every user of that shard and day is in it). So every candidate has an upper bound, and so
 * does any user never listed (per shard, the sum of its full lists' last entries). Candidates are
 * read exactly (their day rows), best bound first, `limit` at a time, until the `limit`-th exact
 * total ranks at least as high as every bound left: the answer is then the exact ranking (users
 * equal on both figures at the last place may stand either way). Reads O(days x limit) rows in
 * the usual case. Undefined when a day's row has no lists (written by an earlier release) or the
 * bounds cannot be met: the caller then reads the user lists.
 */
async function rankFromTop(
  storage: Storage,
  days: string[],
  shards: Array<GlobalDay | undefined>,
  opts: AdminAnalyticsOptions,
): Promise<Ranked | undefined> {
  const key = opts.sortBy;
  const known = new Map<string, { listed: Pair; thetaListed: Pair; days: number[] }>();
  // Per shard: the sum over days of the most an unlisted user can have had.
  const thetaSum: Pair[] = Array.from({ length: GLOBAL_SHARDS }, () => ZERO);
  // Per shard: the days its list was full (an unlisted user of the shard may have a row on those).
  const fullDays: number[][] = Array.from({ length: GLOBAL_SHARDS }, () => []);
  for (let d = 0; d < days.length; d++)
    for (let s = 0; s < GLOBAL_SHARDS; s++) {
      const row = shards[d * GLOBAL_SHARDS + s];
      if (!row) continue;
      if (!row.top) return undefined;
      const list = row.top[key];
      const last = list[list.length - 1];
      const full = list.length >= TOP_K;
      const theta: Pair = full && last ? [last[1], last[2]] : ZERO;
      thetaSum[s] = plus(thetaSum[s]!, theta);
      if (full) fullDays[s]!.push(d);
      for (const [u, score, then] of list) {
        const k = known.get(u) ?? { listed: ZERO, thetaListed: ZERO, days: [] };
        k.listed = plus(k.listed, [score, then]);
        k.thetaListed = plus(k.thetaListed, theta);
        if (!full) k.days.push(d);
        known.set(u, k);
      }
    }
  // A user's possible days: where a list not full names them, and where their shard's list was full.
  // Nowhere else: no row for their shard that day (no call of any of its users), or a list not full
  // without them (no call of theirs). So the rows read do not grow with the days nobody called on.
  const daysOf = (u: string) => {
    const listed = known.get(u)?.days ?? [];
    return listed.length === 0 ? fullDays[shardOf(u)]! : [...listed, ...fullDays[shardOf(u)]!].sort((a, b) => a - b);
  };
  const unseen = thetaSum.reduce((a, b) => (atLeast(a, b) ? a : b));
  const candidates = [...known].map(([u, k]) => ({ u, bound: plus(k.listed, minus(thetaSum[shardOf(u)]!, k.thetaListed)) }));
  candidates.sort((a, b) => (atLeast(a.bound, b.bound) ? (atLeast(b.bound, a.bound) ? (a.u < b.u ? -1 : 1) : -1) : 1));
  const max = opts.maxUserDays ?? 50_000;
  const exact = new Map<string, SplitTotals>();
  let next = 0;
  let read = 0;
  for (;;) {
    // At most maxUserDays day rows in all: the same bound as the user lists' path.
    const size = Math.min(opts.limit, Math.floor((max - read) / days.length));
    const batch = candidates.slice(next, next + Math.max(size, 0)).map((c) => c.u);
    for (const [u, t] of await totalsOf(storage, batch, days, daysOf)) exact.set(u, t);
    next += batch.length;
    read += batch.length * days.length;
    const ranked = top([...exact], opts.sortBy, opts.limit);
    const rows = ranked.map(([userId, t]) => ({ userId, ...t }));
    const left = candidates[next];
    const rest = left && atLeast(left.bound, unseen) ? left.bound : unseen;
    const nobodyLeft = !left && rest[0] === 0 && rest[1] === 0;
    // Proven: nobody left can pass the last place (or there is nobody left at all).
    if (nobodyLeft || (ranked.length === opts.limit && atLeast(pairOf(ranked.at(-1)![1], key), rest))) return { rows, truncated: false };
    if (!left) return undefined;
    if (read + days.length > max) return { rows, truncated: true };
  }
}

/** The ranking from each day's user list and every listed user's day row: grows with the users of the days. */
async function rankFromUserLists(storage: Storage, days: string[], opts: AdminAnalyticsOptions): Promise<Ranked> {
  const max = opts.maxUserDays ?? 50_000;
  const perUser = new Map<string, SplitTotals>();
  let read = 0;
  let truncated = false;
  for (const day of days) {
    const users = await usersOf(storage, day, max - read + 1);
    if (read + users.length > max) {
      truncated = true;
      users.length = max - read;
    }
    const rows = await getChunked<UsageDay>(
      storage,
      users.map((u) => ledgerKeys.usageDay(u, day)),
    );
    rows.forEach((row, i) => {
      if (!row) return;
      const id = users[i]!;
      let t = perUser.get(id);
      if (!t) perUser.set(id, (t = splitZero()));
      addSplit(t, splitOf(row));
    });
    read += users.length;
    if (truncated) break;
  }
  return { rows: top([...perUser], opts.sortBy, opts.limit).map(([userId, t]) => ({ userId, ...t })), truncated };
}

/**
 * Totals, per day, provider, model and the top users over [from, to]. The same answer as last time
 * for the same arguments when no shard row of the range changed since, or within RECENT_MS of the
 * last check when this process recorded no usage since (adminAnalyticsCache.ts): read-only, shared
 * by the callers.
 */
export async function adminUsageAnalytics(storage: Storage, opts: AdminAnalyticsOptions): Promise<AdminAnalytics> {
  const key = [opts.from, opts.to, opts.groupBy ?? '', opts.sortBy, opts.limit, opts.maxUserDays ?? '', opts.series ? 1 : 0].join('|');
  const recent = recentAnswer<AdminAnalytics>(storage, key);
  if (recent) return recent;
  const mark = usageRecordedMark();
  const days = daysBetween(opts.from, opts.to);
  const shards = await shardRows(storage, days);
  const versions = versionsOf(shards);
  const cached = cachedAnswer<AdminAnalytics>(storage, key, versions, mark);
  if (cached) return cached;
  const answer = await analyticsOf(storage, days, shards, opts);
  rememberAnswer(storage, key, versions, answer, mark);
  return answer;
}

async function analyticsOf(
  storage: Storage,
  days: string[],
  shards: Array<GlobalDay | undefined>,
  opts: AdminAnalyticsOptions,
): Promise<AdminAnalytics> {
  const want = (g: UsageGroup) => opts.groupBy === undefined || opts.groupBy === g;
  const users = want('user')
    ? ((await rankFromTop(storage, days, shards, opts)) ?? (await rankFromUserLists(storage, days, opts)))
    : undefined;
  const totals = { ...splitZero(), activeUserDays: 0 };
  const byDay: NonNullable<AdminAnalytics['byDay']> = [];
  const byProvider: Record<string, Totals> = {};
  const byModel: Record<string, Totals> = {};
  // Per day and key, only with `series` (bounded below to the ranked keys).
  const dayProvider = new Map<string, Totals[]>();
  const dayModel = new Map<string, Totals[]>();
  const perDay = (m: Map<string, Totals[]>, key: string, d: number): Totals => {
    let row = m.get(key);
    if (!row) m.set(key, (row = days.map(() => zero())));
    return row[d]!;
  };
  days.forEach((date, d) => {
    const day = { date, activeUsers: 0, ...splitZero() };
    for (let s = 0; s < GLOBAL_SHARDS; s++) {
      const row = shards[d * GLOBAL_SHARDS + s];
      if (!row) continue;
      addSplit(day, splitOf(row));
      day.activeUsers += row.users;
      for (const [k, v] of Object.entries(row.byProvider)) add((byProvider[k] ??= zero()), v);
      for (const [k, v] of Object.entries(row.byModel)) add((byModel[k] ??= zero()), v);
      if (!opts.series) continue;
      for (const [k, v] of Object.entries(row.byProvider)) add(perDay(dayProvider, k, d), v);
      for (const [k, v] of Object.entries(row.byModel)) add(perDay(dayModel, k, d), v);
    }
    if (day.requests === 0) return;
    addSplit(totals, day);
    totals.activeUserDays += day.activeUsers;
    byDay.push(day);
  });
  const rankedProviders = top(Object.entries(byProvider), opts.sortBy, opts.limit);
  const rankedModels = top(Object.entries(byModel), opts.sortBy, opts.limit);
  return {
    period: { from: opts.from, to: opts.to, days: days.length },
    totals,
    ...(want('day') ? { byDay } : {}),
    ...(want('provider') ? { byProvider: rankedProviders.map(([provider, t]) => ({ provider, ...t })) } : {}),
    ...(want('model') ? { byModel: rankedModels.map(([model, t]) => ({ model, ...t })) } : {}),
    ...(opts.series
      ? {
          seriesByProvider: rankedProviders.map(([provider]) => ({ provider, byDay: dayProvider.get(provider)! })),
          seriesByModel: rankedModels.map(([model]) => ({ model, byDay: dayModel.get(model)! })),
        }
      : {}),
    ...(users ? { topUsers: users.rows, ...(users.truncated ? { truncated: true } : {}) } : {}),
  };
}
