import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { SqliteStorage } from './SqliteStorage.js';

describe('SQLite beside the retired journal store', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'retired-journal-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([['journal.3.log'], ['snapshot']])('refuses to create a database next to %s, naming the file and the way out', async (name) => {
    await writeFile(join(dir, name), 'old data');
    const err = await SqliteStorage.open({ file: join(dir, 'ai-backend.db') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CoreError);
    expect((err as CoreError).appCode).toBe('CONFLICT');
    expect((err as Error).message).toContain(name);
    expect((err as Error).message).toMatch(/retired journal file store/);
    expect((err as Error).message).toMatch(/Move those files/);
  });

  it('opens normally in a directory with unrelated files, and once the database exists', async () => {
    await writeFile(join(dir, 'notes.txt'), 'x');
    await writeFile(join(dir, 'journal.log.bak'), 'x'); // not a name the old store wrote
    const first = await SqliteStorage.open({ file: join(dir, 'ai-backend.db') });
    await first.set('k', 1);
    await first.close();
    // The operator moved on deliberately: the old files appearing later do not block the database.
    await writeFile(join(dir, 'snapshot'), 'old data');
    const again = await SqliteStorage.open({ file: join(dir, 'ai-backend.db') });
    expect(await again.get('k')).toBe(1);
    await again.close();
  });
});
