import { describe, expect, it } from 'vitest';
import { checkConfig, resolveConfig } from '../resolveConfig.js';
import type { ConfigInput } from '../schema.js';

const storage = (input: NonNullable<ConfigInput>['storage']) => resolveConfig({ storage: input }).storage;
const problems = (input: unknown) => {
  const r = checkConfig({ storage: input });
  return r.ok ? [] : r.problems;
};
const RETENTION_DEFAULTS = { format: 'jsonl', everyMinutes: 1440, batchSize: 500 };
const REDIS_DEFAULTS = { host: '127.0.0.1', port: 6379, db: 0, keyPrefix: 'ai-backend:', tls: false };

describe('storage: a union by type, carrying only the chosen backend', () => {
  it('defaults to sqlite with only its own sub-object', () => {
    expect(storage(undefined)).toEqual({
      type: 'sqlite',
      dir: '.ai-backend-data',
      shared: 'store',
      retention: RETENTION_DEFAULTS,
      sqlite: { synchronous: 'normal', driver: 'auto' },
    });
  });

  it.each([
    ['memory', { type: 'memory', dir: '.ai-backend-data', shared: 'store', retention: RETENTION_DEFAULTS }],
    ['redis', { type: 'redis', dir: '.ai-backend-data', shared: 'store', retention: RETENTION_DEFAULTS, redis: REDIS_DEFAULTS }],
    [
      'postgres',
      {
        type: 'postgres',
        dir: '.ai-backend-data',
        shared: 'store',
        retention: RETENTION_DEFAULTS,
        postgres: { schema: 'public', ssl: false, poolSize: 10, connectTimeoutMs: 800, queryTimeoutMs: 800 },
      },
    ],
  ] as const)('type %s', (type, expected) => {
    expect(storage({ type })).toEqual(expected);
  });

  it("accepts 'file', the former name of the embedded store, as sqlite", () => {
    expect(storage({ type: 'file', dir: 'data', sqlite: { file: 'x.db' } })).toEqual({
      type: 'sqlite',
      dir: 'data',
      shared: 'store',
      retention: RETENTION_DEFAULTS,
      sqlite: { file: 'x.db', synchronous: 'normal', driver: 'auto' },
    });
  });

  it("keeps today's shape with every backend's sub-object, dropping the ones not chosen", () => {
    const s = storage({ type: 'sqlite', sqlite: { synchronous: 'full' }, postgres: { host: 'db' }, redis: { port: 6380 } });
    expect(s).toEqual({
      type: 'sqlite',
      dir: '.ai-backend-data',
      shared: 'store',
      retention: RETENTION_DEFAULTS,
      sqlite: { synchronous: 'full', driver: 'auto' },
    });
  });

  it('takes a forced SQLite driver and refuses one it does not know', () => {
    expect(storage({ sqlite: { driver: 'better-sqlite3' } })).toMatchObject({ type: 'sqlite', sqlite: { driver: 'better-sqlite3' } });
    expect(problems({ sqlite: { driver: 'sqlite3' } })).toEqual([
      { path: 'storage.sqlite.driver', message: 'Invalid option: expected one of "auto"|"node:sqlite"|"better-sqlite3"' },
    ]);
  });

  it('keeps redis beside postgres when shared state goes to Redis (what DATABASE_URL + REDIS_URL give)', () => {
    const s = storage({ type: 'postgres', shared: 'redis', postgres: { connectionString: 'postgres://h/db' }, redis: { host: 'r' } });
    expect(s.type).toBe('postgres');
    expect(s.redis).toEqual({ ...REDIS_DEFAULTS, host: 'r' });
    expect(storage({ type: 'postgres', shared: 'redis' }).redis).toEqual(REDIS_DEFAULTS);
  });

  it('retention: ages per kind, export format and schedule; off by default, bad values refused with their paths', () => {
    expect(
      storage({ type: 'memory', retention: { ledgerDays: 400, usageDays: 90, format: 'csv', exportDir: '/var/archive', everyMinutes: 0 } })
        .retention,
    ).toEqual({
      ledgerDays: 400,
      usageDays: 90,
      format: 'csv',
      exportDir: '/var/archive',
      everyMinutes: 0,
      batchSize: 500,
    });
    expect(problems({ retention: { ledgerDays: 0 } })[0]?.path).toBe('storage.retention.ledgerDays');
    expect(problems({ retention: { format: 'xml' } })[0]?.path).toBe('storage.retention.format');
    expect(problems({ retention: { batchSize: 100_000 } })[0]?.path).toBe('storage.retention.batchSize');
    expect(problems({ retention: { purgeDays: 3 } })[0]?.path).toBe('storage.retention');
  });

  it('still validates the kept sub-object and refuses unknown types and keys with their paths', () => {
    expect(problems({ type: 'postgres', postgres: { port: 'x' } })[0]?.path).toBe('storage.postgres.port');
    expect(problems({ type: 'redis', redis: { bogus: 1 } })[0]?.path).toBe('storage.redis');
    expect(problems({ type: 'mysql' })).toEqual([
      { path: 'storage.type', message: 'Invalid option: expected one of "sqlite"|"postgres"|"memory"|"redis"|"file"' },
    ]);
    expect(problems({ type: 'memory', sqlte: {} })).toEqual([
      { path: 'storage', message: 'unknown key(s): sqlte (did you mean sqlite?)', unknownKeys: ['sqlte'] },
    ]);
  });
});

describe('oauth.sessionStorage: a union by type too', () => {
  const sessions = (input: unknown) =>
    resolveConfig({ storage: { type: 'memory' }, oauth: { sessionStorage: input as never } }).oauth.sessionStorage;

  it('keeps only what the chosen type reads, accepting the old shape', () => {
    expect(sessions({ type: 'memory', filePath: 'x', redis: { port: 1 } })).toEqual({ type: 'memory' });
    expect(sessions({ type: 'file', filePath: '/var/lib/s', redis: { port: 1 } })).toEqual({ type: 'file', filePath: '/var/lib/s' });
    expect(sessions({ type: 'redis', filePath: 'x', redis: { host: 'r' } })).toEqual({
      type: 'redis',
      redis: { ...REDIS_DEFAULTS, host: 'r' },
    });
    expect(sessions({ type: 'redis' })).toEqual({ type: 'redis', redis: REDIS_DEFAULTS });
  });

  it('still validates the redis options it keeps', () => {
    const r = checkConfig({ oauth: { sessionStorage: { type: 'redis', redis: { port: 0 } } } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]?.path).toBe('oauth.sessionStorage.redis.port');
  });
});
