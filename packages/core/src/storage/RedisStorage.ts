import type { Redis } from 'ioredis';
import { CoreError } from '../errors/index.js';
import { canonicalJson } from './canonicalJson.js';
import { redisClientOptions } from './redisClientOptions.js';
import { CAS_SCRIPT, INCREMENT_SCRIPT, TRANSACT_SCRIPT } from './redisScripts.js';
import type { IncrementOptions, LogEntry, ReadLogOptions, SetOptions, Storage, TxPlan, TxRead } from './Storage.js';

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
}

interface ScriptCommands {
  storageCas(key: string, mode: string, expected: string, value: string, px: string): Promise<number>;
  storageIncrement(key: string, delta: string, min: string, px: string): Promise<number | string | null>;
  storageTransact(numKeys: number, ...args: string[]): Promise<number>;
}

/** Attempts of an optimistic transaction before it gives up with CONFLICT. */
const TRANSACT_ATTEMPTS = 50;

const unavailable = (cause?: unknown): CoreError => new CoreError('UNAVAILABLE', 'storage unavailable', { cause });

/**
 * The multi-server backend. Keys are `<keyPrefix>kv:<key>` (JSON strings, ttl via PX) and logs
 * are lists `<keyPrefix>log:<name>` whose RPUSH length is the sequence number.
 *
 * Fail fast: no offline queue and no retry of in-flight commands, so while Redis is down every
 * call rejects at once with CoreError('UNAVAILABLE') (HTTP 503) instead of piling up; the client
 * keeps reconnecting in the background and calls work again as soon as Redis is back.
 */
export class RedisStorage implements Storage {
  readonly kind = 'redis' as const;
  private readonly redis: Redis & ScriptCommands;
  private readonly kvPrefix: string;
  private readonly logPrefix: string;
  private readonly dueKey: string;
  private lastError: string | undefined;
  private closing: Promise<void> | undefined;

  private constructor(RedisClient: typeof Redis, opts: RedisStorageOptions) {
    const prefix = opts.keyPrefix ?? '';
    this.kvPrefix = `${prefix}kv:`;
    this.logPrefix = `${prefix}log:`;
    this.dueKey = `${prefix}due`;
    this.redis = new RedisClient({
      ...redisClientOptions(opts),
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      connectTimeout: opts.connectTimeoutMs ?? 2000,
      scripts: {
        storageCas: { lua: CAS_SCRIPT, numberOfKeys: 1 },
        storageIncrement: { lua: INCREMENT_SCRIPT, numberOfKeys: 1 },
        storageTransact: { lua: TRANSACT_SCRIPT },
      },
    }) as Redis & ScriptCommands;
    // Without a listener ioredis reports every failed reconnect on stderr; health() shows the last one.
    this.redis.on('error', (err: Error) => {
      this.lastError = err.message;
    });
    this.redis.on('ready', () => {
      this.lastError = undefined;
    });
  }

  /**
   * Create the client and wait for the first connection attempt. An unreachable Redis does not
   * throw: calls fail with UNAVAILABLE and health() reports it until Redis answers.
   */
  static async connect(opts: RedisStorageOptions): Promise<RedisStorage> {
    // ioredis loads only when a redis store is used: servers on the file store start faster.
    const { Redis: RedisClient } = await import('ioredis');
    const storage = new RedisStorage(RedisClient, opts);
    await storage.redis.connect().catch(() => undefined);
    return storage;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const text = await this.run(() => this.redis.get(this.kvPrefix + key));
    return text === null ? undefined : (JSON.parse(text) as T);
  }

  async set<T>(key: string, value: T, opts?: SetOptions): Promise<void> {
    const json = canonicalJson(value);
    const px = pxFor(opts?.ttlMs);
    await this.run(() =>
      px === '' ? this.redis.set(this.kvPrefix + key, json) : this.redis.set(this.kvPrefix + key, json, 'PX', px),
    );
  }

  async delete(key: string): Promise<boolean> {
    return (await this.run(() => this.redis.del(this.kvPrefix + key))) > 0;
  }

  async compareAndSet<T>(key: string, expected: T | undefined, value: T, opts?: SetOptions): Promise<boolean> {
    const json = canonicalJson(value);
    const [mode, exp] = expected === undefined ? ['absent', ''] : ['equal', canonicalJson(expected)];
    const written = await this.run(() => this.redis.storageCas(this.kvPrefix + key, mode, exp, json, pxFor(opts?.ttlMs)));
    return written === 1;
  }

  async increment(key: string, delta: number, opts?: IncrementOptions): Promise<number | null> {
    const min = opts?.min === undefined ? '' : String(opts.min);
    const result = await this.run(() =>
      this.redis.storageIncrement(this.kvPrefix + key, String(delta), min, pxFor(opts?.ttlMs)),
    );
    return result === null ? null : Number(result);
  }

  async keys(prefix: string): Promise<string[]> {
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
    // The list length after RPUSH is the record's 1-based sequence number, atomically.
    return this.run(() => this.redis.rpush(this.logPrefix + log, json));
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
      return rows.map((row, i) => ({ seq: bottom + i, record: JSON.parse(row) as T })).reverse();
    }
    const after = Math.max(0, opts?.after ?? 0);
    const stop = opts?.limit === undefined ? -1 : after + opts.limit - 1;
    const rows = await this.run(() => this.redis.lrange(key, after, stop));
    return rows.map((row, i) => ({ seq: after + i + 1, record: JSON.parse(row) as T }));
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    if (keys.length === 0) return [];
    const rows = await this.run(() => this.redis.mget(...keys.map((k) => this.kvPrefix + k)));
    return rows.map((r) => (r === null ? undefined : (JSON.parse(r) as T)));
  }

  /**
   * Optimistic: read the keys, plan, then a Lua script applies the writes only if none of the
   * keys changed meanwhile (atomic on the server); on a change, read and plan again.
   */
  async transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    const unique = [...new Set(keys)];
    const full = unique.map((k) => this.kvPrefix + k);
    for (let attempt = 0; attempt < TRANSACT_ATTEMPTS; attempt++) {
      const raw = unique.length ? await this.run(() => this.redis.mget(...full)) : [];
      const values = new Map(unique.map((k, i) => [k, raw[i] ?? undefined]));
      const read: TxRead = <T>(key: string) => {
        if (!values.has(key)) throw new Error(`transaction read of undeclared key ${key}`);
        const v = values.get(key);
        return v === undefined ? undefined : (JSON.parse(v) as T);
      };
      const { writes, result } = plan(read);
      const encoded = writes.map((w) =>
        w.op === 'set'
          ? ['s', w.key, canonicalJson(w.value), pxFor(w.ttlMs), w.dueAt === undefined ? '' : String(Math.trunc(w.dueAt))]
          : w.op === 'delete'
            ? ['d', w.key]
            : ['a', w.log, canonicalJson(w.record)],
      );
      const args = [...full, String(unique.length), ...unique.map((k) => values.get(k) ?? ''), JSON.stringify(encoded), this.kvPrefix, this.logPrefix, this.dueKey];
      if ((await this.run(() => this.redis.storageTransact(unique.length, ...args))) === 1) return result;
      // Lost a race: back off a little (randomised) so contending writers spread out.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
    }
    throw new CoreError('CONFLICT', 'storage: too much contention on these keys; retry');
  }

  async dueKeys(prefix: string, now: number, limit: number): Promise<string[]> {
    const keys = await this.run(() => this.redis.zrangebyscore(this.dueKey, '-inf', String(now), 'LIMIT', 0, limit));
    return keys.filter((k) => k.startsWith(prefix));
  }

  async health(): Promise<{ ok: boolean; detail?: string }> {
    if (this.closing) return { ok: false, detail: 'closed' };
    if (this.redis.status !== 'ready') {
      return { ok: false, detail: `redis ${this.redis.status}${this.lastError ? `: ${this.lastError}` : ''}` };
    }
    try {
      await this.redis.ping();
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  }

  close(): Promise<void> {
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
    // Checked here too so a down Redis costs no round trip and no ioredis error allocation.
    if (this.redis.status !== 'ready') throw unavailable(this.lastError);
    try {
      return await op();
    } catch (err) {
      throw unavailable(err);
    }
  }
}

/** PX argument for a ttl; '' for none. A falsy ttl means no expiry, as in MemoryStorage. */
function pxFor(ttlMs: number | undefined): string {
  return ttlMs ? String(Math.max(1, Math.ceil(ttlMs))) : '';
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
