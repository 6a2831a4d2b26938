import type { Redis } from 'ioredis';
import { CoreError } from '../kernel/CoreError.js';
import { canonicalJson, expiresAtFor } from './canonicalJson.js';
import { UnansweredConnection } from './UnansweredConnection.js';
import { ReadBatcher } from './ReadBatcher.js';
import { redisClientOptions } from './redisClientOptions.js';
import { randomUUID } from 'node:crypto';
import { KeyedMutex, unavailableFailure } from './KeyedMutex.js';
import { CAS_SCRIPT, COMMIT_SCRIPT, INCREMENT_SCRIPT, LOCK_READ_SCRIPT, STORE_ID_SCRIPT, UNLOCK_SCRIPT } from './redisScripts.js';
import { StoreFault } from './StoreFault.js';
import { RedisOwnerIndex, type KeyIndexes } from './RedisOwnerIndex.js';
import { OWNER_INDEX_SCRIPTS, type OwnerIndexCommands } from './ownerIndexScripts.js';
import { TxValueCache } from './sql/TxValueCache.js';
import { GroupCommit, planBatch, type BatchJob } from './GroupCommit.js';
import { importOptional, OPTIONAL_PACKAGES } from '../config/optionalPackages.js';
import type {
  IncrementOptions,
  LogEntry,
  KeyPage,
  LogPage,
  ReadLogOptions,
  SetOptions,
  Storage,
  TxPlan,
  TxRead,
  TxWrite,
} from '../kernel/Storage.js';

/** Connection options (the `storage.redis` config section, plus two timeouts). */
export interface RedisStorageOptions {
  host: string;
  port: number;
  password?: string;
  /** Database index. Default 0. */
  db?: number;
  /** Prepended to every Redis key, so several deployments can share one Redis. Default ''. */
  keyPrefix?: string;
  /** Connect with TLS. Default false. */
  tls?: boolean;
  /** A command without a reply after this many ms fails with UNAVAILABLE. Default 2000. */
  commandTimeoutMs?: number;
  /** Give up a connection attempt after this many ms (and retry in the background). Default 2000. */
  connectTimeoutMs?: number;
  /** How often a running store re-reads the key layout's format mark (a newer writer) and its identity (lost data). Default 60000. */
  formatCheckMs?: number;
  /**
   * What this Redis holds: `'store'` (the store itself: balances, holds, ledgers; its identity is
   * checked, claimIdentity) or `'shared'` (the hot, short-lived state beside another store,
   * `storage.shared: 'redis'`, which may come back empty by design: not checked). Default 'store'.
   */
  holds?: 'store' | 'shared';
}

interface ScriptCommands {
  storageCas(key: string, mode: string, expected: string, value: string, px: string, ...indexesAndMember: string[]): Promise<number>;
  storageIncrement(key: string, delta: string, min: string, px: string, ...indexesAndMember: string[]): Promise<number | string | null>;
  storageLockRead(numKeys: number, ...args: string[]): Promise<[0, number] | [1, string[]] | [2, string]>;
  storageCommit(numKeys: number, ...args: string[]): Promise<number | [2, string]>;
  storageId(key: string, id: string, fresh: string): Promise<[1 | 2, string]>;
  storageUnlock(numKeys: number, ...args: string[]): Promise<number>;
}

/**
 * How long a transaction's key locks live in Redis. A transaction holds them for two round trips
 * (about a millisecond); the lease only matters when an instance dies holding them (kill -9): the
 * keys are free again after this long, and a holder slower than its lease cannot commit (the
 * commit script checks the lock is still its own) and starts over.
 */
const LOCK_LEASE_MS = 500;
/** A transaction that cannot get its keys' locks within this long gives up with UNAVAILABLE. */
const LOCK_WAIT_MS = 5_000;
/** Keys read per script when `keys` lists an index (a script holds Redis while it runs). */
const INDEX_PAGE = 1000;
/** Most guessed transactions sent in one commit script. */
const MAX_BATCH = 32;

const unavailable = (cause?: unknown): CoreError => new CoreError('UNAVAILABLE', 'storage unavailable', { cause });

/**
 * The multi-server backend. Keys are `<keyPrefix>kv:<key>` (JSON strings, ttl via PX) and logs
 * are lists `<keyPrefix>log:<name>` whose RPUSH length is the sequence number.
 *
 * Fail fast: no offline queue and no retry of in-flight commands, so while Redis is down every
 * call rejects at once with CoreError('UNAVAILABLE') (HTTP 503) instead of piling up; the client
 * keeps reconnecting in the background and calls work again as soon as Redis is back.
 */
/** What a trimmed log record becomes (no JSON text is empty). */
const TRIMMED = '';
/** How often a running store re-reads the format mark (watchFormat). */
const FORMAT_CHECK_MS = 60_000;
/** KEYS: the list, its trim mark; ARGV: through seq, the placeholder. Returns how many records it trimmed. */
const TRIM_SCRIPT = `
local from = tonumber(redis.call('GET', KEYS[2]) or '0')
local through = math.min(tonumber(ARGV[1]), redis.call('LLEN', KEYS[1]))
if through <= from then return 0 end
for i = from, through - 1 do redis.call('LSET', KEYS[1], i, ARGV[2]) end
redis.call('SET', KEYS[2], through)
return through - from`;
/**
 * KEYS: the format mark, the listing indexes' build mark; ARGV: this release's version, when an
 * upgraded store's build may start, now. Returns the version found, after raising an older one.
 */
const CLAIM_FORMAT_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) >= tonumber(ARGV[1]) then return v end
redis.call('SET', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[2]) ~= 'done' then redis.call('SET', KEYS[2], 'pending:' .. (v and ARGV[2] or ARGV[3])) end
return ARGV[1]`;

/**
 * The version of the key layout below; raise it (and convert at start) when the layout changes.
 * 2: the per-owner index (RedisOwnerIndex), built once from the keys of a store of version 1.
 * 3: the per-family and log indexes beside it, all built once from the keys of an older store.
 */
export const REDIS_FORMAT_VERSION = 3;

export class RedisStorage implements Storage {
  readonly kind = 'redis' as const;
  private readonly redis: Redis & ScriptCommands & OwnerIndexCommands;
  /** Listings read an index instead of scanning the keyspace (RedisOwnerIndex). */
  private readonly owned: RedisOwnerIndex;
  private readonly kvPrefix: string;
  private readonly logPrefix: string;
  private readonly trimPrefix: string;
  private readonly dueKey: string;
  private readonly lockPrefix: string;
  /** Transactions of this process on the same keys run one after another. */
  private readonly mutex = new KeyedMutex();
  /** What this process last read or committed per key: the guess a transaction's one-round-trip attempt plans on. */
  private readonly cache = new TxValueCache();
  /** Guessed transactions waiting for the batch in flight to finish (runBatch). */
  private readonly batches = new GroupCommit(MAX_BATCH, (jobs) => this.runBatch(jobs));
  private lastError: string | undefined;
  /**
   * Set when a newer release's format mark appeared while running, or when the data is not the
   * data this server started with (storeLost): every call refuses from then on.
   */
  private readonly fault = new StoreFault();
  /** `<keyPrefix>storeid`: a random id the first server of a store writes (claimIdentity). */
  private readonly idKey: string;
  /** The id this server read there at its start; '' until Redis answered once (and always for `holds: 'shared'`: nothing checked). */
  private storeId = '';
  /** Whether the identity is checked (RedisStorageOptions.holds 'store'). */
  private readonly identity: boolean;
  private readonly prefix: string;
  /** Re-reads the format mark and the identity every FORMAT_CHECK_MS (one script each). */
  private formatCheck: ReturnType<typeof setInterval> | undefined;
  /** RedisStorageOptions.formatCheckMs: also the grace before an upgraded store's index is built. */
  private readonly formatCheckMs: number;
  private closing: Promise<void> | undefined;
  /** Commands fail at once while the connection is up but Redis answers nothing (UnansweredConnection). */
  private readonly silence = new UnansweredConnection(
    () => this.redis.ping(),
    () => this.closing !== undefined,
  );
  /** Single-key reads of one tick, sent as one MGET (a metered call reads account, preferences and vault at once). */
  private readonly reads = new ReadBatcher((keys) =>
    this.run(async () => {
      if (keys.length === 1) return [(await this.redis.get(this.kvPrefix + keys[0])) ?? undefined];
      return (await this.redis.mget(...keys.map((k) => this.kvPrefix + k))).map((t) => t ?? undefined);
    }),
  );

  private constructor(RedisClient: typeof Redis, opts: RedisStorageOptions) {
    const prefix = opts.keyPrefix ?? '';
    this.prefix = prefix;
    this.idKey = `${prefix}storeid`;
    this.identity = opts.holds !== 'shared';
    this.kvPrefix = `${prefix}kv:`;
    this.logPrefix = `${prefix}log:`;
    this.trimPrefix = `${prefix}logtrim:`;
    this.dueKey = `${prefix}due`;
    this.lockPrefix = `${prefix}lock:`;
    this.formatCheckMs = opts.formatCheckMs ?? FORMAT_CHECK_MS;
    this.redis = new RedisClient({
      ...redisClientOptions(opts),
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      connectTimeout: opts.connectTimeoutMs ?? 2000,
      scripts: {
        storageCas: { lua: CAS_SCRIPT, numberOfKeys: 1 },
        storageIncrement: { lua: INCREMENT_SCRIPT, numberOfKeys: 1 },
        storageLockRead: { lua: LOCK_READ_SCRIPT },
        storageCommit: { lua: COMMIT_SCRIPT },
        storageUnlock: { lua: UNLOCK_SCRIPT },
        storageId: { lua: STORE_ID_SCRIPT, numberOfKeys: 1 },
        ...OWNER_INDEX_SCRIPTS,
      },
    }) as Redis & ScriptCommands & OwnerIndexCommands;
    this.owned = new RedisOwnerIndex(this.redis, prefix, this.kvPrefix, this.logPrefix, (op) => this.run(op));
    // Without a listener ioredis reports every failed reconnect on stderr; health() shows the last one.
    this.redis.on('error', (err: Error) => {
      this.lastError = err.message;
    });
    this.redis.on('ready', () => {
      this.lastError = undefined;
      this.silence.answered();
    });
  }

  /**
   * Create the client and wait for the first connection attempt. An unreachable Redis does not
   * throw: calls fail with UNAVAILABLE and health() reports it until Redis answers.
   */
  static async connect(opts: RedisStorageOptions): Promise<RedisStorage> {
    // ioredis loads only when a redis store is used: servers on the file store start faster.
    const { Redis: RedisClient } = await importOptional(OPTIONAL_PACKAGES.ioredis, 'a Redis store', () => import('ioredis'));
    const storage = new RedisStorage(RedisClient, opts);
    await storage.redis.connect().catch(() => undefined);
    const prefix = opts.keyPrefix ?? '';
    if (storage.redis.status === 'ready') {
      await storage.claimFormat(prefix);
      if (storage.identity) await storage.claimIdentity();
      // A new (or pre-mark) store's index is built now, waited for at most a moment; an upgraded
      // one's after its grace, in the background (RedisOwnerIndex).
      await storage.owned.buildIfDue();
    }
    storage.watchFormat(prefix, storage.formatCheckMs);
    return storage;
  }

  onFault(listener: (err: CoreError) => void): void {
    this.fault.listen(listener);
  }

  /**
   * Redis without persistence restarted, a FLUSHALL, or the keys deleted while servers run: every
   * balance, hold, ledger and budget would silently start again from nothing (free calls for the
   * holds in flight, budgets reset). So the first server of a store writes a random id under
   * `<keyPrefix>storeid`, every server reads it at start, and checks it is still there, unchanged,
   * in every transaction's scripts (no extra round trip), on every reconnect and every
   * formatCheckMs. When it is not, the check marks the key 'lost' (so every other server and every
   * later start refuses the store too, even one started afresh on the emptied keys) and this
   * server answers every call 503 saying what happened (storeLost), until an operator restores a
   * backup or deletes the key to start over empty on purpose. A store written before this check
   * existed gets its id at the next start.
   */
  private async claimIdentity(): Promise<void> {
    const [state, found] = await this.redis.storageId(this.idKey, this.storeId, randomUUID());
    if (state === 1) {
      this.storeId = found;
      return;
    }
    const err = this.storeLost(found);
    if (this.formatCheck === undefined) {
      // At start: refuse to start at all.
      this.redis.disconnect();
      throw new CoreError('CONFLICT', err.message);
    }
  }

  /** The store's data is not what this server read at start (see claimIdentity): refuse every call from now on. */
  private storeLost(found: string): CoreError {
    const key = this.idKey;
    const why =
      found === ''
        ? `its identity key "${key}" is gone`
        : found.startsWith('lost')
          ? `a server found its data lost before (the key "${key}" says "lost")`
          : `another server started it afresh (the key "${key}" holds another id)`;
    const message = `storage: the Redis data under the prefix "${this.prefix}" is not the data this server started with (${why}): Redis restarted without persistence, was flushed, or its keys were deleted while servers ran, so every balance, hold and ledger would start again from nothing. Every call is refused (503). Restore Redis from a backup (its RDB or AOF file) and restart the servers; to start over with an empty store on purpose, stop every server and delete the key "${key}".`;
    return this.fault.raise(new CoreError('UNAVAILABLE', message));
  }

  /**
   * A newer release started on the same Redis while this one runs (a rolling upgrade that was
   * not meant to share keys, or a second cluster on the same prefix): it raises the format mark,
   * and from then on its writes may mean something this release would misread or overwrite. So
   * the mark is read again on every reconnect (a Redis that was down at start is checked when it
   * comes up) and every FORMAT_CHECK_MS, and once it is newer every call of this store refuses
   * with the message (503: health says storage is down and why) until the process is replaced.
   * Not checked per call: one GET a minute costs nothing, one per call would cost a round trip
   * per write; a writer that starts between two checks has at most FORMAT_CHECK_MS of overlap.
   */
  private watchFormat(prefix: string, everyMs: number): void {
    const check = () =>
      void this.claimFormat(prefix)
        .then(() => (this.identity ? this.claimIdentity() : undefined))
        .then(() => this.owned.ensureBuilt())
        .catch(() => undefined);
    this.redis.on('ready', check);
    this.formatCheck = setInterval(() => {
      if (this.redis.status === 'ready') check();
    }, everyMs).unref();
  }

  /**
   * Record the key layout's version under `<keyPrefix>format`, and refuse a store a newer release
   * wrote: its keys may mean something this release would misread or overwrite. An older (or
   * absent: written before the mark existed) version is raised, and the owner index's build is
   * marked pending (RedisOwnerIndex): at once for a store without a mark, after one format check
   * (formatCheckMs) for a store of version 1, whose instances may still write unindexed keys until
   * their next check sees the raised mark. Atomic (one script), so instances starting together
   * agree. Checked when Redis answers at start; a Redis down then is checked when it comes up.
   */
  private async claimFormat(prefix: string): Promise<void> {
    const now = Date.now();
    const found = Number(
      await this.redis.eval(
        CLAIM_FORMAT_SCRIPT,
        2,
        `${prefix}format`,
        this.owned.markKey,
        String(REDIS_FORMAT_VERSION),
        String(now + this.formatCheckMs),
        String(now),
      ),
    );
    if (found > REDIS_FORMAT_VERSION) {
      const message = `storage: the Redis keys under the prefix "${prefix}" were written by a newer release of ai-backend (format version ${found}; this release knows up to ${REDIS_FORMAT_VERSION}). Run that release or a later one; to go back to this one, restore a backup taken before the upgrade.`;
      if (this.formatCheck === undefined) {
        // At start: refuse to start at all.
        this.redis.disconnect();
        throw new CoreError('CONFLICT', message);
      }
      this.fault.raise(new CoreError('UNAVAILABLE', message));
    }
  }

  async get<T>(key: string): Promise<T | undefined> {
    if (this.closing) throw new CoreError('UNAVAILABLE', 'storage is closed');
    const text = await this.reads.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    this.cache.forget(key);
    const json = canonicalJson(value);
    const px = pxFor(opts?.ttlMs);
    const idx = this.owned.of(key);
    if (indexed(idx)) await this.run(() => this.redis.storageSetIndexed(this.kvPrefix + key, json, px, ...idx, key));
    else
      await this.run(() => (px === '' ? this.redis.set(this.kvPrefix + key, json) : this.redis.set(this.kvPrefix + key, json, 'PX', px)));
  }

  async delete(key: string): Promise<boolean> {
    this.cache.forget(key);
    const idx = this.owned.of(key);
    if (indexed(idx)) return (await this.run(() => this.redis.storageDeleteIndexed(this.kvPrefix + key, ...idx, key))) > 0;
    return (await this.run(() => this.redis.del(this.kvPrefix + key))) > 0;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    this.cache.forget(key);
    const json = canonicalJson(value);
    const [mode, exp] = expected === undefined ? ['absent', ''] : ['equal', canonicalJson(expected)];
    const written = await this.run(() =>
      this.redis.storageCas(this.kvPrefix + key, mode, exp, json, pxFor(opts?.ttlMs), ...this.owned.of(key), key),
    );
    return written === 1;
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    this.cache.forget(key);
    const min = opts?.min === undefined ? '' : String(opts.min);
    const idx = this.owned.of(key);
    const result = await this.run(() =>
      this.redis.storageIncrement(this.kvPrefix + key, String(delta), min, pxFor(opts?.ttlMs), ...idx, key),
    );
    return result === null ? null : Number(result);
  }

  async keys(prefix: string): Promise<string[]> {
    if (await this.owned.serves(prefix)) {
      // A page per script: a family of a million keys (a response cache) is listed without
      // holding Redis for the whole of it, as SCAN did not.
      const found: string[] = [];
      let after = '';
      do {
        const page = await this.owned.page(prefix, after, INDEX_PAGE);
        found.push(...page.keys);
        after = page.last;
      } while (after !== '');
      return found;
    }
    const match = `${escapeGlob(this.kvPrefix + prefix)}*`;
    return this.run(async () => {
      const found = new Set<string>(); // SCAN may return a key more than once
      let cursor = '0';
      do {
        const [next, batch] = await this.redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        for (const k of batch) found.add(k.slice(this.kvPrefix.length));
      } while (cursor !== '0');
      return [...found];
    });
  }

  async append<T>(log: string, record: T): Promise<number> {
    const json = canonicalJson(record);
    // The list length after RPUSH is the record's 1-based sequence number, atomically; a new log
    // joins the log index in the same script (RedisOwnerIndex).
    return this.run(() => this.redis.storageAppendIndexed(this.logPrefix + log, json, this.owned.logIndex, log));
  }

  async readLog<T>(log: string, opts?: ReadLogOptions): Promise<LogEntry<T>[]> {
    if (opts?.limit !== undefined && opts.limit <= 0) return [];
    const key = this.logPrefix + log;
    if (opts?.newestFirst) {
      const length = await this.run(() => this.redis.llen(key));
      const top = Math.min(length, (opts.before ?? length + 1) - 1);
      if (top <= 0) return [];
      const bottom = opts.limit === undefined ? 1 : Math.max(1, top - opts.limit + 1);
      const rows = await this.run(() => this.redis.lrange(key, bottom - 1, top - 1));
      // Trimmed records (TRIMMED) are the oldest: dropping them from a page ends the log there.
      return rows.flatMap((row, i) => (row === TRIMMED ? [] : [{ seq: bottom + i, record: JSON.parse(row) as T }])).reverse();
    }
    // Oldest first starts past the trimmed records (read once; audits and retention, not hot paths).
    const trimmed = Number((await this.run(() => this.redis.get(this.trimPrefix + log))) ?? 0);
    const after = Math.max(trimmed, opts?.after ?? 0);
    const stop = opts?.limit === undefined ? -1 : after + opts.limit - 1;
    const rows = await this.run(() => this.redis.lrange(key, after, stop));
    return rows.flatMap((row, i) => (row === TRIMMED ? [] : [{ seq: after + i + 1, record: JSON.parse(row) as T }]));
  }

  /**
   * A list's index is its records' sequence numbers (RPUSH's length), so trimmed records cannot
   * leave the list (LTRIM would renumber the rest): each becomes an empty string (a couple of
   * bytes instead of the record) and `<keyPrefix>logtrim:<name>` says how far that went. One
   * script, at most one batch of LSETs near the head of the list.
   */
  async trimLog(log: string, throughSeq: number): Promise<number> {
    return this.run(async () =>
      Number(await this.redis.eval(TRIM_SCRIPT, 2, this.logPrefix + log, this.trimPrefix + log, String(throughSeq), TRIMMED)),
    );
  }

  /** A listed family's or owner's keys page through an index (cursors `i:<last key>`), any other prefix through SCAN (numeric cursors). */
  async listKeys(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<KeyPage> {
    if ((opts.cursor === undefined || opts.cursor.startsWith('i:')) && (await this.owned.serves(prefix))) {
      const { keys, last } = await this.owned.page(prefix, opts.cursor?.slice(2) ?? '', Math.max(1, opts.limit));
      return { keys, ...(last !== '' ? { cursor: `i:${last}` } : {}) };
    }
    const match = `${escapeGlob(this.kvPrefix + prefix)}*`;
    const [next, keys] = await this.run(() => this.redis.scan(opts.cursor ?? '0', 'MATCH', match, 'COUNT', opts.limit));
    return { keys: keys.map((k) => k.slice(this.kvPrefix.length)), ...(next !== '0' ? { cursor: next } : {}) };
  }

  /** Through the log index once built (cursors `i:<last log>`), before that through SCAN (numeric cursors). */
  async listLogs(prefix: string, opts: { cursor?: string | undefined; limit: number }): Promise<LogPage> {
    if ((opts.cursor === undefined || opts.cursor.startsWith('i:')) && (await this.owned.isBuilt())) {
      const { keys, last } = await this.owned.logPage(prefix, opts.cursor?.slice(2) ?? '', Math.max(1, opts.limit));
      return { logs: keys, ...(last !== '' ? { cursor: `i:${last}` } : {}) };
    }
    const match = `${(this.logPrefix + prefix).replace(/[*?[\]\\]/g, '\\$&')}*`;
    const [next, keys] = await this.run(() => this.redis.scan(opts.cursor ?? '0', 'MATCH', match, 'COUNT', opts.limit));
    return { logs: keys.map((k) => k.slice(this.logPrefix.length)), ...(next !== '0' ? { cursor: next } : {}) };
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    if (keys.length === 0) return [];
    const rows = await this.run(() => this.redis.mget(...keys.map((k) => this.kvPrefix + k)));
    return rows.map((r) => (r === null ? undefined : (JSON.parse(r) as T)));
  }

  /**
   * A hot key (one user's account under 50 concurrent calls, on any number of instances) makes
   * transactions wait their turn instead of losing races, and costs one round trip per batch:
   * - when this process knows what some of the keys hold (it wrote them last: one user's calls on
   *   one instance), the transaction is planned on that guess and goes out with the others queued
   *   meanwhile as ONE commit script (runBatch), whose check proves every guess;
   * - otherwise, or when a guess did not hold, the locked way: in this process transactions on
   *   the same keys queue (KeyedMutex); round trip 1 (a Lua script) takes every key's lock or none
   *   and returns the values; `plan` runs; round trip 2 (a Lua script) checks no other transaction
   *   holds a lock and no key changed, applies the writes and drops the locks, atomically.
   * A lock held by another instance is waited for (at most its lease, LOCK_LEASE_MS, when that
   * instance died). Starting over happens only when another transaction took over an expired
   * lease or a key was written outside transactions meanwhile.
   *
   * `durable: false` (TransactOptions) is ignored: Redis makes every write as durable as the
   * server's own `appendonly`/`appendfsync` setting (none without AOF), and a command cannot ask
   * for less, so there is nothing to save on one transaction.
   */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    if (this.closing) throw new CoreError('UNAVAILABLE', 'storage is closed');
    const unique = [...new Set(keys)].sort();
    // Redis was down at start: read the store's identity first, so this transaction checks it.
    if (this.storeId === '' && this.identity) await this.run(() => this.claimIdentity());
    // A key this process has not seen is guessed absent when it knows some of the others: a call's
    // own new rows (its hold, its finished record) sit beside its user's known ones, so a
    // reservation goes out guessed too. A wrong guess costs one round trip, once.
    if (unique.length > 0 && unique.some((k) => this.cache.has(k))) {
      const batched = await this.batches.submit(unique, plan);
      if (batched.committed) return batched.result as R;
    }
    const unlock = await this.mutex.lock(unique);
    let failure: CoreError | undefined;
    try {
      const redisKeys = [...unique.map((k) => this.lockPrefix + k), ...unique.map((k) => this.kvPrefix + k)];
      const deadline = Date.now() + LOCK_WAIT_MS;
      for (let wait = 1; ; ) {
        const token = randomUUID();
        const raw = unique.length ? await this.lockRead(redisKeys, token, deadline) : [];
        const values = new Map(unique.map((k, i) => [k, raw[i] ?? '']));
        for (const [k, v] of values) this.cache.remember(k, { value: v === '' ? undefined : v, version: undefined });
        let planned: TxPlan<R>;
        try {
          planned = plan(readerOf(values));
        } catch (err) {
          if (unique.length)
            await this.run(() => this.redis.storageUnlock(unique.length, ...redisKeys.slice(0, unique.length), token)).catch(
              () => undefined,
            );
          throw err;
        }
        if (planned.writes.length === 0 && unique.length) {
          await this.run(() => this.redis.storageUnlock(unique.length, ...redisKeys.slice(0, unique.length), token));
          return planned.result;
        }
        if (await this.commit(redisKeys, token, unique, values, this.encode(planned.writes))) return planned.result;
        if (Date.now() > deadline) throw new CoreError('UNAVAILABLE', 'storage: could not complete a transaction in time; retry');
        await sleep(Math.random() * wait);
        wait = Math.min(20, wait * 2);
      }
    } catch (err) {
      failure = unavailableFailure(err);
      throw err;
    } finally {
      unlock(failure);
    }
  }

  /**
   * Group commit (as PostgresStorage.runBatch): the transactions queued while the previous batch
   * was in flight are planned one after another, each against what this process last knew of its
   * keys plus the writes of the plans before it in the batch, and sent as ONE commit script (one
   * check, the writes in order). Why: one user's concurrent calls all touch that user's account;
   * sent one by one, each waited a whole round trip for the one before. The check covers every
   * key a plan saw before the batch wrote it, with its value as guessed, so if the script
   * commits, each plan saw exactly the state the ones before it left: the same outcome as running
   * them in order. If the check fails, or a plan throws or writes nothing on a guess, those
   * transactions take the locked way, each on its own.
   */
  private async runBatch(jobs: BatchJob[]): Promise<void> {
    const now = Date.now();
    // Rows are raw values ('' = absent), as the commit script compares them.
    const { accepted, expected, encoded } = planBatch<string, EncodedWrites>(jobs, {
      guess: (k) => this.cache.guess(k, now).value ?? '',
      reader: readerOf,
      encode: (writes) => this.encode(writes),
      written: (out) => out.rows.map(([key, text]) => [key, text ?? ''] as const),
    });
    const writes: EncodedWrites = { args: encoded.flatMap((e) => e.args), rows: encoded.flatMap((e) => e.rows) };
    if (accepted.length === 0) return;
    const keys = [...expected.keys()].sort();
    const redisKeys = [...keys.map((k) => this.lockPrefix + k), ...keys.map((k) => this.kvPrefix + k)];
    let applied: boolean;
    try {
      applied = await this.commit(redisKeys, randomUUID(), keys, expected, writes, now);
    } catch (err) {
      for (const a of accepted) a.job.reject(err);
      return;
    }
    for (const a of accepted) a.job.resolve(applied ? { committed: true, result: a.result } : { committed: false });
  }

  private encode(writes: readonly TxWrite[]): EncodedWrites {
    return encodeWrites(writes, (key) => this.owned.of(key));
  }

  /** The commit script (see COMMIT_SCRIPT); true when the writes were applied. Remembers what it wrote. */
  private async commit(
    redisKeys: string[],
    token: string,
    unique: string[],
    values: Map<string, string>,
    writes: EncodedWrites,
    now = Date.now(),
  ): Promise<boolean> {
    const args = [
      ...redisKeys,
      token,
      ...unique.map((k) => values.get(k)!),
      this.kvPrefix,
      this.logPrefix,
      this.dueKey,
      this.idKey,
      this.storeId,
      this.owned.logIndex,
      ...writes.args,
    ];
    let applied: boolean;
    try {
      const r = await this.run(() => this.redis.storageCommit(redisKeys.length, ...args));
      if (Array.isArray(r)) throw this.storeLost(r[1]);
      applied = r === 1;
    } catch (err) {
      for (const k of unique) this.cache.forget(k); // outcome unknown
      throw err;
    }
    if (!applied) {
      for (const k of unique) this.cache.forget(k);
      return false;
    }
    // In write order: the last write of a key is what it holds.
    for (const [key, text, ttlMs] of writes.rows)
      this.cache.remember(key, { value: text, version: undefined }, expiresAtFor(ttlMs, now), now);
    return true;
  }

  /** Take the locks of `redisKeys` (lock rows, then keys) and read the keys, waiting while another instance holds one. */
  private async lockRead(redisKeys: string[], token: string, deadline: number): Promise<string[]> {
    for (let wait = 1; ; ) {
      const r = await this.run(() =>
        this.redis.storageLockRead(redisKeys.length, ...redisKeys, token, String(LOCK_LEASE_MS), this.idKey, this.storeId),
      );
      if (r[0] === 1) return r[1];
      if (r[0] === 2) throw this.storeLost(r[1]);
      if (Date.now() > deadline) throw new CoreError('UNAVAILABLE', 'storage: these keys stayed locked by another instance; retry');
      // Held by another instance: usually for a round trip; at most for its remaining lease.
      await sleep(Math.min(Math.max(1, r[1]), Math.random() * wait + 0.5));
      wait = Math.min(10, wait * 2);
    }
  }

  /**
   * The due index is one sorted set for every prefix (the holds, the alert outbox), so it is read
   * page by page until `limit` keys of `prefix` are found: due keys of another prefix listed
   * first (a burst of alert deliveries) never hide this one's (the hold sweep then found none).
   */
  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    const found: string[] = [];
    const page = Math.max(limit, 100);
    for (let offset = 0; found.length < limit; offset += page) {
      const keys = await this.run(() => this.redis.zrangebyscore(this.dueKey, '-inf', String(now), 'LIMIT', offset, page));
      for (const k of keys) if (k.startsWith(prefix) && found.length < limit) found.push(k);
      if (keys.length < page) break;
    }
    return found;
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closing) return { ok: false, detail: 'closed' };
    if (this.fault.error) return { ok: false, detail: this.fault.error.message };
    if (this.redis.status !== 'ready') {
      return { ok: false, detail: `redis ${this.redis.status}${this.lastError ? `: ${this.lastError}` : ''}` };
    }
    if (this.silence.isUnanswered) return { ok: false, detail: 'redis does not answer (a command timed out)' };
    try {
      await this.redis.ping();
      return { ok: true };
    } catch (err) {
      this.silence.failed(err);
      return { ok: false, detail: (err as Error).message };
    }
  }

  /** Whether listings read their indexes yet (RedisOwnerIndex: a store upgraded from an older format builds them after a grace). */
  ownerIndexBuilt(): Promise<boolean> {
    return this.owned.isBuilt();
  }

  close(): Promise<void> {
    clearInterval(this.formatCheck);
    this.owned.stop();
    this.closing ??= (async () => {
      if (this.redis.status === 'ready') {
        try {
          await this.redis.quit();
          return;
        } catch {
          // fall through: drop the connection instead
        }
      }
      this.redis.disconnect();
    })();
    return this.closing;
  }

  private async run<T>(op: () => Promise<T>): Promise<T> {
    if (this.closing) throw new CoreError('UNAVAILABLE', 'storage is closed');
    if (this.fault.error) throw this.fault.error;
    // Checked here too so a down Redis costs no round trip and no ioredis error allocation.
    if (this.redis.status !== 'ready') throw unavailable(this.lastError);
    // A connection that stopped answering: every command would wait for its timeout.
    if (this.silence.isUnanswered) throw unavailable(this.lastError ?? 'Redis does not answer');
    try {
      return await op();
    } catch (err) {
      this.silence.failed(err);
      throw unavailable(err);
    }
  }
}

/** A transaction's writes as the commit script's arguments, and the rows they leave (text undefined: deleted), in order. */
interface EncodedWrites {
  args: string[];
  rows: Array<[key: string, text: string | undefined, ttlMs: number | undefined]>;
}

/** The writes as plain script arguments (see COMMIT_SCRIPT), each value's JSON once. */
function encodeWrites(writes: readonly TxWrite[], indexOf: (key: string) => KeyIndexes): EncodedWrites {
  const encoded: EncodedWrites = { args: [], rows: [] };
  for (const w of writes) {
    if (w.op === 'set') {
      const text = canonicalJson(w.value);
      encoded.rows.push([w.key, text, w.ttlMs]);
      encoded.args.push('s', w.key, text, pxFor(w.ttlMs), w.dueAt === undefined ? '' : String(Math.trunc(w.dueAt)), ...indexOf(w.key));
    } else if (w.op === 'delete') {
      encoded.rows.push([w.key, undefined, undefined]);
      encoded.args.push('d', w.key, ...indexOf(w.key));
    } else encoded.args.push('a', w.log, canonicalJson(w.record));
  }
  return encoded;
}

/** The read function a plan gets over the raw values of its declared keys ('' = absent). */
function readerOf(values: Map<string, string>): TxRead {
  return <T>(key: string) => {
    if (!values.has(key)) throw new Error(`transaction read of undeclared key ${key}`);
    const v = values.get(key)!;
    return v === '' ? undefined : (JSON.parse(v) as T);
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** PX argument for a ttl; '' for none. A falsy ttl means no expiry, as in MemoryStorage. */
function pxFor(ttlMs: number | undefined): string {
  return ttlMs ? String(Math.max(1, Math.ceil(ttlMs))) : '';
}

/** Whether a key is in a listed family (written through the indexing scripts). */
function indexed([oidx, fidx]: KeyIndexes): boolean {
  return oidx !== '' || fidx !== '';
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
