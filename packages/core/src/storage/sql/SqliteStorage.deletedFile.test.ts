import { readdir, rename, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';
import { SqliteStorage } from './SqliteStorage.js';

/**
 * The database file deleted (or replaced) while the server runs. SQLite keeps writing to the open
 * file, which no path names any more: every write was acknowledged, health said ok, and the next
 * start created an empty store in its place (every balance gone, nothing said). The store now
 * notices within a second (and before health answers), copies everything the open file holds
 * beside the path, and answers 503 naming the copy.
 */
describe.each(SQLITE_DRIVERS)('SqliteStorage (%s): the database file deleted while open', (driver) => {
  let dir: string;
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a deleted data directory: refused with a clear message, and no acknowledged write is lost', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sqlite-deleted-'));
    const data = join(dir, 'data');
    const file = join(data, 'ai-backend.db');
    const store = await SqliteStorage.open({ file, driver });
    await store.set('acct:a', { balance: 100 });
    await rm(data, { recursive: true, force: true });
    // Acknowledged before the store could notice (it looks once a second): it must not be lost.
    await store.set('acct:b', { balance: 200 });

    const health = await store.health();
    expect(health.ok).toBe(false);
    expect(health.detail).toMatch(/the database file .*ai-backend\.db was deleted while the server runs/);
    await expect(store.set('acct:c', { balance: 300 })).rejects.toMatchObject({ appCode: 'UNAVAILABLE', message: /was deleted/ });
    await store.close();

    const copies = (await readdir(data)).filter((f) => f.startsWith('ai-backend.db.rescued-') && !f.includes('-wal'));
    expect(copies).toHaveLength(1);
    expect(health.detail).toContain(join(data, copies[0]!));
    // What the operator is told to do: move the copy to the path, start again.
    await rename(join(data, copies[0]!), file);
    const again = await SqliteStorage.open({ file, driver });
    expect(await again.getMany(['acct:a', 'acct:b', 'acct:c'])).toEqual([{ balance: 100 }, { balance: 200 }, undefined]);
    await again.close();
  });

  it('a file replaced under the open one is noticed too, and the other file is left alone', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sqlite-replaced-'));
    const file = join(dir, 'ai-backend.db');
    const store = await SqliteStorage.open({ file, driver });
    // The runtime's one error line (createRuntime: Storage.onFault), as on PostgreSQL and Redis.
    const faults: string[] = [];
    store.onFault((err) => faults.push(err.message));
    await store.set('k', 1);
    await rename(file, join(dir, 'moved.db'));
    await writeFile(file, '');
    expect((await store.health()).detail).toMatch(/was replaced by another file/);
    await store.health();
    expect(faults).toHaveLength(1);
    expect(faults[0]).toMatch(/was replaced by another file/);
    await expect(store.get('k')).rejects.toMatchObject({ appCode: 'UNAVAILABLE' });
    await store.close();
  });

  it('a store whose file stays where it is keeps working', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sqlite-kept-'));
    const store = await SqliteStorage.open({ file: join(dir, 'x.db'), driver });
    await store.set('k', 1);
    expect(await store.health()).toEqual({ ok: true });
    expect(await store.get('k')).toBe(1);
    await store.close();
    expect((await readdir(dir)).filter((f) => f.includes('rescued'))).toEqual([]);
  });
});
