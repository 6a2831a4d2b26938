import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/resolveConfig.js';
import { createRuntime } from '../createRuntime.js';
import { createLogger } from '../kernel/Logger.js';
import { SqliteStorage } from './sql/SqliteStorage.js';
import { SQLITE_DRIVERS } from './sql/__tests__/sqliteDrivers.js';

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

let dir: string;
let umask: number;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ai-backend-private-'));
  // No umask to narrow anything: the modes seen are the ones the code asks for (SQLite's own
  // default would show as 644 here).
  umask = process.umask(0);
});
afterEach(async () => {
  process.umask(umask);
  await rm(dir, { recursive: true, force: true });
});

describe.each(SQLITE_DRIVERS)('private data files on %s', (driver) => {
  it('creates missing folders 0700 and the database and its WAL 0600', async () => {
    const file = join(dir, 'a', 'b', 'ai-backend.db');
    const store = await SqliteStorage.open({ file, driver });
    try {
      await store.set('k', { secret: true });
      expect({ a: modeOf(join(dir, 'a')), b: modeOf(join(dir, 'a', 'b')), db: modeOf(file), wal: modeOf(`${file}-wal`) }).toEqual({
        a: '700',
        b: '700',
        db: '600',
        wal: '600',
      });
    } finally {
      await store.close();
    }
  });
});

describe('the start checks the data directory', () => {
  const startWith = async (dataDir: string) => {
    const lines: string[] = [];
    const rt = await createRuntime(resolveConfig({ storage: { type: 'sqlite', dir: dataDir } }), {
      logger: createLogger('warn', (l) => lines.push(l)),
    });
    await rt.close();
    return lines
      .map((l) => JSON.parse(l) as { level: string; msg: string; fix?: string })
      .filter((l) => l.msg.includes('open to other users'));
  };

  it('warns, naming the path and the chmod, when an existing data directory or database is wider than private', async () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    expect(await startWith(data)).toEqual([
      {
        time: expect.any(String),
        level: 'warn',
        msg: expect.stringContaining(`the data directory ${data} is open to other users (mode 755)`),
        fix: `chmod 700 ${data}`,
      },
    ]);
    chmodSync(data, 0o700);
    chmodSync(join(data, 'ai-backend.db'), 0o644);
    // SQLite gives the WAL the database file's mode, so a wide database has a wide WAL too.
    const db = join(data, 'ai-backend.db');
    expect((await startWith(data)).map((w) => w.fix)).toEqual([`chmod 600 ${db}`, `chmod 600 ${db}-wal`]);
  });

  it('says nothing when the server created the directory itself', async () => {
    const data = join(dir, 'fresh');
    expect(await startWith(data)).toEqual([]);
    expect(modeOf(data)).toBe('700');
  });
});
