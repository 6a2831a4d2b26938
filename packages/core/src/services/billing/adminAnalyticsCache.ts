import type { Storage } from '../../kernel/Storage.js';
import { AgedMap } from '../../lib/AgedMap.js';
import { GLOBAL_SHARDS, globalKeys, type GlobalDay } from './globalUsage.js';

/**
 * What the console's usage reads (adminUsageAnalytics) keep per store, so that a poll costs what
 * the rows it shows cost, not a re-ranking of every shard's top list:
 *
 * - The shard rows of days that are over. A call is recorded on the day of its settle by the
 *   settling instance's clock, so an hour past the day's end (far more than clocks differ by) no
 *   instance writes to it. The console asks for the same 14 or 30 days on every poll, and looking
 *   up 16 rows a day cost more the larger the store (each a walk down the key B-tree: 4 µs against
 *   1.5 µs in an empty SQLite store at 34,000 rows, more at millions), so the rows of days that are
 *   over are kept, the day's 16 as one entry, for an hour (a row reaching its 400-day TTL still
 *   shows for up to that long) and for at most CLOSED_DAYS days (the oldest cached first out).
 * - The last answers, each with the versions of the shard rows it was computed from (see
 *   versionsOf). Every call still reads the shard rows of the days not over (today's, from the
 *   store: another instance may have written them), and an answer is reused only when every row of
 *   its range is the version it was computed from: then the ranking's inputs are unchanged too (a
 *   user's day row is written in the same transaction as their shard's row), and so is the answer.
 *   No staleness beyond the closed days' hour; what it saves is the ranking over the shards' top
 *   lists (512 entries a day) and the ranked users' day rows while nothing was recorded, e.g.
 *   between two administrators' polls, or on a quiet hour.
 *
 * Memory, per store: at most CLOSED_DAYS x GLOBAL_SHARDS rows (about 1.9 KB of JSON each when its
 * lists are full: at most about 3 MB) and ANSWERS answers (each at most 100 rows per grouping and,
 * with series, 100 providers' and models' totals per day of at most 90 days).
 * Read-only: callers share what is cached here (the sums copy what they add up).
 */
const DAY_MS = 86_400_000;
const CLOSED_AFTER_MS = DAY_MS + 3_600_000;
const CLOSED_TTL_MS = 3_600_000;
export const CLOSED_DAYS = 100;
/** Answers kept per store (the overview's periods and admin.usageAnalytics's usual arguments). */
export const ANSWERS = 8;
/** An answer is dropped an hour after it was computed even if its rows did not change (see versionsOf). */
const ANSWER_TTL_MS = 3_600_000;
/** How long an answer is served without reading its rows again (see recentAnswer). */
export const RECENT_MS = 2_000;
/** Keys per getMany round trip. */
const CHUNK = 1000;

const closedDays = new WeakMap<Storage, AgedMap<string, Array<GlobalDay | undefined>>>();

export async function getChunked<T>(storage: Storage, keys: string[]): Promise<Array<T | undefined>> {
  const out: Array<T | undefined> = [];
  for (let i = 0; i < keys.length; i += CHUNK) out.push(...(await storage.getMany<T>(keys.slice(i, i + CHUNK))));
  return out;
}

/** The GLOBAL_SHARDS rows of each day, in order: days that are over from the cache where it has them. */
export async function shardRows(storage: Storage, days: string[], now = Date.now()): Promise<Array<GlobalDay | undefined>> {
  let cache = closedDays.get(storage);
  if (!cache) closedDays.set(storage, (cache = new AgedMap(CLOSED_TTL_MS, CLOSED_DAYS)));
  const closed = (day: string) => now - Date.parse(`${day}T00:00:00Z`) >= CLOSED_AFTER_MS;
  const cached = days.map((d) => (closed(d) ? cache.get(d, now) : undefined));
  const missing = days.filter((_, i) => !cached[i]);
  const keys = missing.flatMap((d) => Array.from({ length: GLOBAL_SHARDS }, (_, s) => globalKeys.day(d, s)));
  const read = await getChunked<GlobalDay>(storage, keys);
  const byDay = new Map(missing.map((d, i) => [d, read.slice(i * GLOBAL_SHARDS, (i + 1) * GLOBAL_SHARDS)]));
  for (const [d, rows] of byDay) if (closed(d)) cache.set(d, rows, now);
  return days.flatMap((d, i) => cached[i] ?? byDay.get(d)!);
}

/**
 * Each shard row's version: its request count (-1: no row). Every write of a shard row records one
 * more call in it (usageWrites), so a row with the same count is the same row; a row that expired
 * or was deleted reads -1.
 */
export function versionsOf(shards: ReadonlyArray<GlobalDay | undefined>): number[] {
  return shards.map((row) => (row ? row.totals.requests : -1));
}

const sameVersions = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * Usage recorded by this process (any store): bumped after each transaction that wrote usage rows
 * commits, so an answer checked before it is not served from the window (see recentAnswer).
 */
let recorded = 0;

/** Called after a transaction that recorded usage (usageWrites) committed, or may have. */
export function noteUsageRecorded(): void {
  recorded++;
}

/** What recentAnswer compares: take it before reading the rows an answer is checked against. */
export const usageRecordedMark = (): number => recorded;

interface Entry {
  versions: number[];
  answer: unknown;
  computedAt: number;
  /** When the answer was last known current (computed, or its rows read and found unchanged), and the mark then. */
  checkedAt: number;
  mark: number;
}

const answers = new WeakMap<Storage, AgedMap<string, Entry>>();

/**
 * The answer cached under `key` if it was checked less than RECENT_MS ago and this process has
 * recorded no usage since: then it is served without reading anything (concurrent and repeated
 * polls share one read). Calls recorded by other instances show after at most RECENT_MS.
 */
export function recentAnswer<T>(storage: Storage, key: string, now = Date.now()): T | undefined {
  const hit = answers.get(storage)?.get(key, now);
  return hit && now - hit.checkedAt < RECENT_MS && hit.mark === recorded ? (hit.answer as T) : undefined;
}

/** The answer cached under `key` if it was computed from rows of exactly these `versions` (within the hour); marked checked. */
export function cachedAnswer<T>(storage: Storage, key: string, versions: readonly number[], mark: number, now = Date.now()): T | undefined {
  const hit = answers.get(storage)?.get(key, now);
  if (!hit || now - hit.computedAt >= ANSWER_TTL_MS || !sameVersions(hit.versions, versions)) return undefined;
  hit.checkedAt = now;
  hit.mark = mark;
  return hit.answer as T;
}

export function rememberAnswer(storage: Storage, key: string, versions: number[], answer: unknown, mark: number, now = Date.now()): void {
  let cache = answers.get(storage);
  if (!cache) answers.set(storage, (cache = new AgedMap(ANSWER_TTL_MS, ANSWERS)));
  cache.set(key, { versions, answer, computedAt: now, checkedAt: now, mark }, now);
}
