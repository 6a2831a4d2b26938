import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '@ai-backend/transports';
import {
  dropTestKeys,
  dropTestSchema,
  rawTestClient,
  runTestSql,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  rpcCall,
  startAiServer,
  tokenFor,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Stores written by an earlier release open after an upgrade and keep working. The fixtures in
 * fixtures/store-d92dec1 were written by commit d92dec1 (2026-11-23, schema version 1: before
 * the aib_tx function of migration 2) through its own server: two credits and three metered
 * calls for one user (generate.test.ts.txt, README.md). Each store is opened by today's server:
 * the balance is the one the old release reported, the ledger audits, and calls and credits
 * work on it. A store marked by a newer release is refused at start with a message that says so.
 */
const FIXTURES = new URL('./fixtures/store-d92dec1/', import.meta.url);
const manifest = JSON.parse(await readFile(new URL('manifest.json', FIXTURES), 'utf8')) as {
  user: string;
  sqlite: { balance: { virtualTokenBalance: number } };
  postgres: { balance: { virtualTokenBalance: number } };
  redis: { balance: { virtualTokenBalance: number } };
};
const pgTarget = await testPostgres();
const redisTarget = await testRedis();

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

type StorageInput = NonNullable<Parameters<typeof gatewayConfig>[1]> extends { storage?: infer S } ? S : never;

/** What must hold on any upgraded store: the old balance, a clean audit, then a call and a credit. */
async function keepsWorking(storage: StorageInput, expectedBalance: number): Promise<void> {
  const gw = await startAiServer(upstream, { storage });
  try {
    const token = await tokenFor(manifest.user);
    const balance = async () =>
      (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
    expect(await balance()).toBe(expectedBalance);
    expect((await gw.runtime.billing.ledger.audit(manifest.user)).consistent).toBe(true);
    const call = await rpcCall(gw.url, token, 'ai.generateText', {
      content: 'after the upgrade',
      systemPrompt: 's',
      provider: 'openai',
      options: { maxTokens: 10 },
    });
    expect(call.error).toBeUndefined();
    const afterCall = await balance();
    expect(afterCall).toBeLessThan(expectedBalance);
    await creditTokens(gw.url, await tokenFor('upgrade-admin', { admin: true }), manifest.user, 100, 'after-upgrade');
    expect(await balance()).toBe(afterCall + 100);
    expect((await gw.runtime.billing.ledger.audit(manifest.user)).consistent).toBe(true);
  } finally {
    await gw.stop();
  }
}

/** Run SQL on a closed SQLite file with whichever binding this Node has (as the store does). */
async function execSql(file: string, sql: string): Promise<void> {
  const nodeSqlite = await import('node:sqlite' as string).catch(() => undefined);
  const Db = nodeSqlite
    ? (nodeSqlite as { DatabaseSync: new (f: string) => { exec(s: string): void; close(): void } }).DatabaseSync
    : (createRequire(new URL('../../packages/core/package.json', import.meta.url))('better-sqlite3') as new (
        f: string,
      ) => { exec(s: string): void; close(): void });
  const db = new Db(file);
  db.exec(sql);
  db.close();
}

/** Starting a server on `storage` fails with the newer-release message. */
async function refusesToStart(storage: StorageInput): Promise<void> {
  const server = createServer(gatewayConfig(upstream, { storage }));
  await expect(server.ready()).rejects.toThrow(/written by a newer release of ai-backend/);
}

describe('SQLite file of d92dec1', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'store-upgrade-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('opens with its balance and ledger, takes calls and credits', async () => {
    const file = join(dir, 'old.db');
    await copyFile(new URL('sqlite.db', FIXTURES), file);
    await keepsWorking({ type: 'sqlite', sqlite: { file } }, manifest.sqlite.balance.virtualTokenBalance);
  });

  it('a file a newer release migrated is refused at start', async () => {
    const file = join(dir, 'newer.db');
    await copyFile(new URL('sqlite.db', FIXTURES), file);
    await execSql(file, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', '2030-01-01')");
    await refusesToStart({ type: 'sqlite', sqlite: { file } });
  });
});

describe.skipIf(!pgTarget.ok)('PostgreSQL dump of d92dec1', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropTestSchema(pgTarget, schema);
  });

  /** Load the dump into a schema of this run (psql's meta-commands dropped: the pg client runs plain SQL). */
  async function restore(label: string) {
    const opts = testPostgresOptions(pgTarget, label);
    schemas.push(opts.schema);
    const dump = (await readFile(new URL('postgres.sql', FIXTURES), 'utf8'))
      .split('\n')
      .filter((l) => !l.startsWith('\\'))
      .join('\n')
      .replaceAll('aib_fixture_old', opts.schema);
    await runTestSql(pgTarget, dump);
    return {
      opts,
      storage: {
        type: 'postgres' as const,
        postgres: {
          host: pgTarget.host,
          port: pgTarget.port,
          user: opts.user,
          database: opts.database,
          schema: opts.schema,
          ...(pgTarget.password ? { password: pgTarget.password } : {}),
        },
      },
    };
  }

  it('two instances starting together migrate it once (version 1 → today), then it keeps working', async () => {
    const { opts, storage } = await restore('upgrade');
    const [a, b] = await Promise.all([startAiServer(upstream, { storage }), startAiServer(upstream, { storage })]);
    await Promise.all([a.stop(), b.stop()]);
    const rows = (await runTestSql(pgTarget, `SELECT version FROM "${opts.schema}".schema_migrations ORDER BY version`)).map(
      (r) => r.version,
    );
    expect(rows).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await keepsWorking(storage, manifest.postgres.balance.virtualTokenBalance);
  }, 60_000);

  it('a schema a newer release migrated is refused at start', async () => {
    const { opts, storage } = await restore('newer');
    await runTestSql(pgTarget, `INSERT INTO "${opts.schema}".schema_migrations VALUES (999, 'from the future', '2030-01-01')`);
    await refusesToStart(storage);
  });
});

describe.skipIf(!redisTarget.ok)('Redis keys of d92dec1', () => {
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const prefix of prefixes) await dropTestKeys(redisTarget, prefix);
  });

  async function restore(label: string) {
    const opts = testRedisOptions(redisTarget, label);
    prefixes.push(opts.keyPrefix);
    const dump = JSON.parse(await readFile(new URL('redis.json', FIXTURES), 'utf8')) as Array<{
      key: string;
      type: string;
      value: unknown;
      pttl: number;
    }>;
    const client = rawTestClient(redisTarget);
    await client.connect();
    try {
      for (const { key, type, value, pttl } of dump) {
        const k = opts.keyPrefix + key;
        if (type === 'string') await client.set(k, value as string);
        else if (type === 'list') await client.rpush(k, ...(value as string[]));
        else if (type === 'zset') {
          const flat = value as string[];
          for (let i = 0; i < flat.length; i += 2) await client.zadd(k, flat[i + 1]!, flat[i]!);
        } else throw new Error(`fixture key ${key} has type ${type}, which this restore does not know`);
        if (pttl > 0) await client.pexpire(k, pttl);
      }
    } finally {
      client.disconnect();
    }
    return { opts, storage: { type: 'redis' as const, redis: opts } };
  }

  it('opens with its balance and ledger, takes calls and credits, and is marked with the current format', async () => {
    const { opts, storage } = await restore('upgrade');
    await keepsWorking(storage, manifest.redis.balance.virtualTokenBalance);
    const client = rawTestClient(redisTarget);
    await client.connect();
    expect(await client.get(`${opts.keyPrefix}format`)).toBe('3');
    client.disconnect();
  });

  it('keys a newer release wrote are refused at start', async () => {
    const { opts, storage } = await restore('newer');
    const client = rawTestClient(redisTarget);
    await client.connect();
    await client.set(`${opts.keyPrefix}format`, '4');
    client.disconnect();
    await refusesToStart(storage);
  });
});
