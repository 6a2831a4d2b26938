import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from './SqliteStorage.js';
import { loadSqliteDriver } from './loadSqliteDriver.js';
import { NODE_SQLITE_SINCE, nodeShipsSqlite } from '../../lib/nodeShipsSqlite.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

const hasNodeSqlite = nodeShipsSqlite();

describe('choosing the SQLite driver', () => {
  it('node:sqlite ships from 22.13 and 23.4 on, decided from the version alone', () => {
    expect(['20.20.2', '22.12.0', '22.13.0', '23.3.0', '23.4.0', '24.0.0', '26.12.1'].map((v) => nodeShipsSqlite(v))).toEqual([
      false,
      false,
      true,
      false,
      true,
      true,
      true,
    ]);
    // The version rule and Node itself agree.
    expect(Boolean(process.getBuiltinModule?.('node:sqlite'))).toBe(hasNodeSqlite);
  });

  it(`'auto' takes node:sqlite on Node ${NODE_SQLITE_SINCE}+ and better-sqlite3 before`, async () => {
    expect((await loadSqliteDriver('auto')).name).toBe(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3');
    expect(SQLITE_DRIVERS).toContain(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3');
  });

  it.runIf(!hasNodeSqlite)("forcing 'node:sqlite' on a Node without it fails naming the Node version it needs", async () => {
    await expect(loadSqliteDriver('node:sqlite')).rejects.toMatchObject({
      appCode: 'NOT_CONFIGURED',
      message: expect.stringContaining(`does not ship node:sqlite (it needs Node ${NODE_SQLITE_SINCE} or later)`),
    });
  });

  it('without better-sqlite3 installed: forcing it, and (before Node 22.13) the default, fail at open naming the package and its install command', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-driver-'));
    try {
      // A module resolution that does not find better-sqlite3, as in an app that never installed it.
      const hooks = join(dir, 'hooks.mjs');
      await writeFile(
        hooks,
        `export async function resolve(specifier, context, next) {
  if (specifier === 'better-sqlite3') throw Object.assign(new Error("Cannot find package 'better-sqlite3'"), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
}\n`,
      );
      const register = join(dir, 'register.mjs');
      await writeFile(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
      const script = join(dir, 'child.mjs');
      await writeFile(
        script,
        `import { SqliteStorage } from ${JSON.stringify(new URL('./SqliteStorage.ts', import.meta.url).href)};
const outcome = async (driver) => {
  try { const s = await SqliteStorage.open({ file: ${JSON.stringify(join(dir, 'x.db'))}, driver }); const name = s.driver; await s.close(); return { opened: name }; }
  catch (err) { return { appCode: err.appCode, message: err.message }; }
};
console.log(JSON.stringify({ forced: await outcome('better-sqlite3'), auto: await outcome('auto') }));
`,
      );
      const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
      const out = spawnSync(process.execPath, ['--import', tsx, '--import', pathToFileURL(register).href, script], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(out.status, out.stderr).toBe(0);
      const { forced, auto } = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
      const refused = { appCode: 'NOT_CONFIGURED', message: expect.stringContaining('needs the better-sqlite3 package here') };
      expect(forced).toEqual(refused);
      expect(forced.message).toContain('install it: npm i better-sqlite3@12');
      expect(auto).toEqual(hasNodeSqlite ? { opened: 'node:sqlite' } : refused);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe.runIf(SQLITE_DRIVERS.length === 2)('one data file, both drivers', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-both-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['better-sqlite3', 'node:sqlite'],
    ['node:sqlite', 'better-sqlite3'],
  ] as const)('a store written by %s opens with %s, with every record, expiry, due time and log sequence', async (writer, reader) => {
    const file = join(dir, 'data.db');
    const a = await SqliteStorage.open({ file, driver: writer });
    expect(a.driver).toBe(writer);
    await a.set('plain', { deep: [1, { two: 2 }], text: 'ünïcödé ✓' });
    await a.set('ttl', 'later', { ttlMs: 3_600_000 });
    await a.set('expired', 'gone', { ttlMs: 1 });
    await a.increment('ctr', 41.5);
    await a.append('ledger', { amount: 5 });
    await a.transact(['tx'], () => ({
      writes: [
        { op: 'set', key: 'tx', value: 1, dueAt: 5 },
        { op: 'append', log: 'ledger', record: { amount: -2 } },
      ],
      result: null,
    }));
    await a.close();

    const b = await SqliteStorage.open({ file, driver: reader });
    try {
      expect(b.driver).toBe(reader);
      expect(await b.get('plain')).toEqual({ deep: [1, { two: 2 }], text: 'ünïcödé ✓' });
      expect(await b.get('ttl')).toBe('later');
      expect(await b.get('expired')).toBeUndefined();
      expect(await b.increment('ctr', 0.5)).toBe(42);
      expect(await b.dueKeys('', 10, 10)).toEqual(['tx']);
      expect(await b.readLog('ledger')).toEqual([
        { seq: 1, record: { amount: 5 } },
        { seq: 2, record: { amount: -2 } },
      ]);
      expect(await b.append('ledger', { amount: 1 })).toBe(3);
      expect(await b.keys('')).toEqual(['ctr', 'plain', 'ttl', 'tx']);
    } finally {
      await b.close();
    }
  });
});
