import { CoreError } from '../../../kernel/CoreError.js';
import { resolveConfig } from '../../../config/resolveConfig.js';
import type { ConfigInput } from '../../../config/schema.js';
import { createLogger } from '../../../kernel/Logger.js';
import { createRuntime } from '../../../createRuntime.js';
import type { Runtime } from '../../../runtime/Runtime.js';
import { MemoryStorage } from '../../../storage/MemoryStorage.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisStorage } from '../../../storage/RedisStorage.js';
import { PostgresStorage } from '../../../storage/sql/PostgresStorage.js';
import { SqliteStorage } from '../../../storage/sql/SqliteStorage.js';
import type { Storage } from '../../../kernel/Storage.js';
import {
  dropTestKeys,
  dropTestSchema,
  rawTestClient,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import type { Context } from '../../../pipeline/context.js';
import type { Identity } from '../../../kernel/identity.js';
import { invoke } from '../../../pipeline/invoke.js';
import { callContext } from '../../../pipeline/callContext.js';

/** Test helpers for billing, vault and the billing/user/auth routers (not shipped: __tests__). */

export const VAULT_KEY = 'test-vault-master-key-0123456789abcdef';

export const alice: Identity = {
  sub: 'user-alice',
  email: 'alice@example.com',
  emailVerified: true,
  scopes: [],
  isAdmin: false,
  via: 'jwt',
};
export const bob: Identity = { sub: 'user-bob', email: 'bob@example.com', emailVerified: true, scopes: [], isAdmin: false, via: 'jwt' };
export const admin: Identity = {
  sub: 'user-admin',
  email: 'admin@example.com',
  emailVerified: true,
  scopes: ['mcp:admin'],
  isAdmin: true,
  via: 'jwt',
};

/** An opened store plus what a test needs around it. */
export interface OpenStore {
  storage: Storage;
  /** A second connection to the same data (a second server instance); memory returns the same store. */
  another(): Promise<Storage>;
  /** Every stored value as text, for "no plaintext key in the store" checks. */
  dump(): Promise<string>;
  cleanup(): Promise<void>;
}

export interface Backend {
  name: 'memory' | 'sqlite' | 'postgres' | 'redis';
  setup?(): Promise<void>;
  open(label: string): Promise<OpenStore>;
}

async function dumpMemory(storage: Storage): Promise<string> {
  const parts: string[] = [];
  for (const key of await storage.keys('')) parts.push(key, JSON.stringify(await storage.get(key)));
  return parts.join('\n');
}

// Without a Redis the redis backend is left out of `backends` and the run's last line says so.
const redis = await testRedis();
const postgres = await testPostgres();

async function dumpRedis(prefix: string): Promise<string> {
  const client = rawTestClient(redis);
  await client.connect();
  try {
    const parts: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const type = await client.type(key);
        const value =
          type === 'list'
            ? (await client.lrange(key, 0, -1)).join('\n')
            : type === 'zset'
              ? (await client.zrange(key, '0', '-1', 'WITHSCORES')).join('\n')
              : String(await client.get(key));
        parts.push(key, value);
      }
    } while (cursor !== '0');
    return parts.join('\n');
  } finally {
    client.disconnect();
  }
}

export const backends: Backend[] = (
  [
    {
      name: 'memory',
      open: async () => {
        const storage = new MemoryStorage();
        return { storage, another: async () => storage, dump: () => dumpMemory(storage), cleanup: async () => undefined };
      },
    },
    {
      name: 'sqlite',
      open: async (label) => {
        const dir = await mkdtemp(join(tmpdir(), `${label}-`));
        const storage = await SqliteStorage.open({ file: join(dir, 'test.db') });
        return {
          storage,
          // One process owns an SQLite file: a second instance is the same store.
          another: async () => storage,
          dump: () => dumpMemory(storage),
          cleanup: () => rm(dir, { recursive: true, force: true }),
        };
      },
    },
    {
      name: 'postgres',
      open: async (label) => {
        const opts = testPostgresOptions(postgres, label);
        const storage = await PostgresStorage.connect(opts);
        const extra: Storage[] = [];
        return {
          storage,
          another: async () => {
            const s = await PostgresStorage.connect(opts);
            extra.push(s);
            return s;
          },
          dump: () => dumpMemory(storage),
          cleanup: async () => {
            for (const s of extra) await s.close();
            await dropTestSchema(postgres, opts.schema);
          },
        };
      },
    },
    {
      name: 'redis',
      open: async (label) => {
        const opts = testRedisOptions(redis, label);
        const storage = await RedisStorage.connect(opts);
        const extra: Storage[] = [];
        return {
          storage,
          another: async () => {
            const s = await RedisStorage.connect(opts);
            extra.push(s);
            return s;
          },
          dump: () => dumpRedis(opts.keyPrefix),
          cleanup: async () => {
            for (const s of extra) await s.close();
            await dropTestKeys(redis, opts.keyPrefix);
          },
        };
      },
    },
  ] satisfies Backend[]
).filter((b) => (b.name !== 'redis' || redis.ok) && (b.name !== 'postgres' || postgres.ok));

/** A real runtime on the given storage; log lines are collected in `logs`. */
export async function makeRuntime(storage: Storage, config: ConfigInput = {}, logs: string[] = []): Promise<Runtime> {
  const resolved = resolveConfig({
    storage: { type: 'memory' },
    ...config,
    billing: { vaultKey: VAULT_KEY, ...config.billing },
  });
  return createRuntime(resolved, { storage, logger: createLogger('debug', (line) => logs.push(line)) });
}

export function ctxFor(runtime: Runtime, identity: Identity | null, ip = '127.0.0.1'): Context {
  return callContext(runtime, {
    identity,
    credentialError: null,
    req: { transport: 'rpc', ip, signal: new AbortController().signal, headers: new Headers() },
  });
}

/** Call a procedure through the shared invoke seam; throws the tRPC error on failure. */
export async function call<T = any>(runtime: Runtime, path: string, input: unknown, identity: Identity | null): Promise<T> {
  const result = await invoke(runtime.router, path, input, ctxFor(runtime, identity));
  if (!result.ok) throw result.error;
  return result.data as T;
}

/**
 * A storage that forwards to a real one but fails chosen calls with UNAVAILABLE, as a backend
 * outage between two steps of an operation would.
 */
export class OutageStorage implements Storage {
  private failing = new Map<string, number>();
  constructor(private readonly inner: Storage) {}
  get kind() {
    return this.inner.kind;
  }
  /** The next `times` calls of `method` fail. */
  failNext(method: 'append' | 'increment' | 'set' | 'compareAndSet' | 'delete' | 'transact', times = 1): void {
    this.failing.set(method, times);
  }
  private check(method: string): void {
    const n = this.failing.get(method) ?? 0;
    if (n > 0) {
      this.failing.set(method, n - 1);
      throw new CoreError('UNAVAILABLE', 'storage unavailable (simulated outage)');
    }
  }
  get: Storage['get'] = (k) => this.inner.get(k);
  set: Storage['set'] = async (k, v, o) => (this.check('set'), this.inner.set(k, v, o));
  delete: Storage['delete'] = async (k) => (this.check('delete'), this.inner.delete(k));
  compareAndSet: Storage['compareAndSet'] = async (k, e, v, o) => (this.check('compareAndSet'), this.inner.compareAndSet(k, e, v, o));
  increment: Storage['increment'] = async (k, d, o) => (this.check('increment'), this.inner.increment(k, d, o));
  keys: Storage['keys'] = (p) => this.inner.keys(p);
  append: Storage['append'] = async (l, r) => (this.check('append'), this.inner.append(l, r));
  readLog: Storage['readLog'] = (l, o) => this.inner.readLog(l, o);
  trimLog: Storage['trimLog'] = (l, s) => this.inner.trimLog(l, s);
  listLogs: Storage['listLogs'] = (p, o) => this.inner.listLogs(p, o);
  listKeys: Storage['listKeys'] = (p, o) => this.inner.listKeys(p, o);
  getMany: Storage['getMany'] = (k) => this.inner.getMany(k);
  transact: Storage['transact'] = async (k, p, o) => (this.check('transact'), this.inner.transact(k, p, o));
  dueKeys: Storage['dueKeys'] = (p, n, l) => this.inner.dueKeys(p, n, l);
  health: Storage['health'] = () => this.inner.health();
  close: Storage['close'] = () => this.inner.close();
}
