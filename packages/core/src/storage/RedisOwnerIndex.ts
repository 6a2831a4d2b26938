import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { familyOf, ownerGroupOf } from '../kernel/ownerListings.js';
import type { OwnerIndexCommands } from './ownerIndexScripts.js';

/**
 * The Redis store's listing indexes (docs/storage.md, "Per-owner listings on Redis" and
 * "Family and log listings on Redis"), so that no listing a
 * user or an operator asks for is a SCAN of the whole keyspace:
 * - per owner group of a family listed per owner (kernel/ownerListings.ts OWNER_LISTED,
 *   `apikeyowner:<user>:`), the sorted set `<keyPrefix>idx:<group>` of its keys;
 * - per family listed whole or by a prefix inside it (FAMILY_LISTED: `aicache:`, `stats:`, the
 *   alert outbox...), the sorted set `<keyPrefix>fidx:<family>` of its keys, and
 *   `<keyPrefix>fexp:<family>` of those that expire, by when (how expired keys are pruned);
 * - every log's name, in `<keyPrefix>logindex` (retention lists `ledger:`, `usage:`...).
 * Each is written by the same script as the key or the log (set, delete, compare-and-set,
 * increment, append, a transaction's commit: INDEX_LUA). A listing of a prefix reads a lexical
 * range of its index (one script, one round trip, its cost the keys listed); members whose key is
 * gone (expired: Redis says nothing) are dropped as they are met.
 *
 * A store written before these indexes existed (format version 1, or 2 with the owner index only)
 * gets them built once, by one instance: the first start of this release raises the format mark
 * (older instances refuse the store from their next check on) and marks the build pending; after a
 * grace of one format check, so that no older instance writes unindexed keys anymore, one instance
 * (a lease) SCANs the keyspace and indexes what it finds, then marks the build done. Until then
 * listings SCAN, as before.
 */

/** A key's indexes: its owner group's, its family's and the family's expiry set ('' each when none). */
export type KeyIndexes = readonly [oidx: string, fidx: string, fexp: string];

/** The mark of a finished build. */
const DONE = 'done';
/** How long a builder's lease lives without a renewal (each batch renews it). */
const LEASE_MS = 30_000;
/** The longest a start waits for a build that is due at once (buildIfDue). */
const START_WAIT_MS = 2_000;
/** Keys per SCAN of the build. */
const BUILD_COUNT = 1000;

const NONE: KeyIndexes = ['', '', ''];

export class RedisOwnerIndex {
  /**
   * `<keyPrefix>keyindex`: 'pending:<ms>' (build from then on), 'done', absent (a store of an older
   * format not started by this release yet). Not format 2's `<keyPrefix>listindex` (the owner index
   * alone), which instances of that release keep reading during the grace: what this release writes
   * keeps their owner index whole, so they go on listing through it.
   */
  readonly markKey: string;
  /** `<keyPrefix>logindex`: every log's name. */
  readonly logIndex: string;
  private readonly leaseKey: string;
  private readonly idxPrefix: string;
  private readonly fidxPrefix: string;
  private readonly fexpPrefix: string;
  /** Set once this instance read the build's done mark: listings read the index from then on. */
  private built = false;
  private building: Promise<void> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly redis: Redis & OwnerIndexCommands,
    private readonly prefix: string,
    private readonly kvPrefix: string,
    private readonly logPrefix: string,
    /** Runs a command as the store does (fails fast while Redis is down or the store closed). */
    private readonly run: <T>(op: () => Promise<T>) => Promise<T>,
  ) {
    this.markKey = `${prefix}keyindex`;
    this.leaseKey = `${prefix}keyindex:lease`;
    this.logIndex = `${prefix}logindex`;
    this.idxPrefix = `${prefix}idx:`;
    this.fidxPrefix = `${prefix}fidx:`;
    this.fexpPrefix = `${prefix}fexp:`;
  }

  /** The indexes a key is written with (NONE for a key in no listed family). */
  of(key: string): KeyIndexes {
    const group = ownerGroupOf(key);
    const family = familyOf(key);
    if (group === undefined && family === undefined) return NONE;
    return [
      group === undefined ? '' : this.idxPrefix + group,
      family === undefined ? '' : this.fidxPrefix + family,
      family === undefined ? '' : this.fexpPrefix + family,
    ];
  }

  /**
   * The index a listing of `prefix` reads: its owner group's when it names an owner
   * (`vault:alice:`), else its family's (`vault:`, `stats:2026-12-01:`), else none (a SCAN).
   */
  private servingIndex(prefix: string): readonly [idx: string, exp: string] | undefined {
    const group = ownerGroupOf(prefix);
    if (group !== undefined) return [this.idxPrefix + group, ''];
    const family = familyOf(prefix);
    return family === undefined ? undefined : [this.fidxPrefix + family, this.fexpPrefix + family];
  }

  /** Whether listings of `prefix` read an index: it has one and the build is done. */
  async serves(prefix: string): Promise<boolean> {
    return this.servingIndex(prefix) !== undefined && this.isBuilt();
  }

  /** One page (limit -1: all) of the keys under `prefix` after `after` ('' from the first); `last` '' at the end. */
  page(prefix: string, after: string, limit: number): Promise<{ keys: string[]; last: string }> {
    const [idx, exp] = this.servingIndex(prefix)!;
    return this.read(idx, exp, this.kvPrefix, prefix, after, limit);
  }

  /** One page of the logs under `prefix`, as `page` (every log is indexed: serves once built). */
  logPage(prefix: string, after: string, limit: number): Promise<{ keys: string[]; last: string }> {
    return this.read(this.logIndex, '', this.logPrefix, prefix, after, limit);
  }

  private async read(idx: string, exp: string, of: string, prefix: string, after: string, limit: number) {
    const [last, ...keys] = await this.run(() => this.redis.storageListIndexed(idx, exp, of, prefix, after, String(limit)));
    return { keys, last: last ?? '' };
  }

  /**
   * Build the index if the mark says it is pending, in the background: now, or when the grace
   * written in the mark ends. Called at every format check; a builder that died leaves its lease
   * to expire, and the next check of any instance takes over.
   */
  ensureBuilt(): void {
    if (this.built || this.building) return;
    this.building = this.buildOnce()
      .catch(() => undefined)
      .finally(() => {
        this.building = undefined;
      });
  }

  /**
   * At start: build now when the build is due (a new store, whose build scans only what shares its
   * Redis database), waiting for it at most START_WAIT_MS: a new store on a database another
   * application fills goes on building in the background instead of delaying the start.
   */
  async buildIfDue(): Promise<void> {
    this.ensureBuilt();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.building, new Promise((r) => (timer = setTimeout(r, START_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** Whether the build is done (read from Redis until this instance saw it done). */
  async isBuilt(): Promise<boolean> {
    if (!this.built) this.built = (await this.run(() => this.redis.get(this.markKey))) === DONE;
    return this.built;
  }

  stop(): void {
    clearTimeout(this.retry);
  }

  private async buildOnce(): Promise<void> {
    const mark = await this.run(() => this.redis.get(this.markKey));
    if (mark === DONE) {
      this.built = true;
      return;
    }
    const notBefore = Number(mark?.startsWith('pending:') ? mark.slice('pending:'.length) : 0);
    const wait = notBefore - Date.now();
    if (wait > 0) {
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.ensureBuilt(), wait).unref();
      return;
    }
    const token = randomUUID();
    const started = await this.run(() => this.redis.storageBuildStart(this.leaseKey, this.markKey, token, String(LEASE_MS)));
    if (started === 0) this.built = true;
    if (started !== 1) return;
    // One pass over the store's keys (every key of the database when the prefix is ''): its
    // values and its logs alike.
    const match = `${this.prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    do {
      const [next, found] = await this.run(() => this.redis.scan(cursor, 'MATCH', match, 'COUNT', BUILD_COUNT));
      cursor = next;
      const keys: string[] = [];
      const logs: string[] = [];
      for (const redisKey of found) {
        if (redisKey.startsWith(this.logPrefix)) logs.push(redisKey.slice(this.logPrefix.length));
        if (!redisKey.startsWith(this.kvPrefix)) continue;
        const key = redisKey.slice(this.kvPrefix.length);
        const indexes = this.of(key);
        if (indexes !== NONE) keys.push(...indexes, key);
      }
      const batch = [this.leaseKey, token, String(LEASE_MS), this.kvPrefix, this.logPrefix, this.logIndex, String(keys.length / 4)];
      if ((await this.run(() => this.redis.storageBuildBatch(1, ...batch, ...keys, ...logs))) !== 1) return;
    } while (cursor !== '0');
    if ((await this.run(() => this.redis.storageBuildDone(this.leaseKey, this.markKey, token))) === 1) this.built = true;
  }
}
