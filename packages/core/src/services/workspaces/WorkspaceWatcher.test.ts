import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '@ai-backend/test-utils';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { createLogger } from '../../kernel/Logger.js';
import { PathGuard } from './PathGuard.js';
import { WorkspaceWatcher, type WorkspaceChange } from './WorkspaceWatcher.js';

let root: string;
let watcher: WorkspaceWatcher;
let events: WorkspaceChange[];

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'aib-watch-'));
  await mkdir(path.join(root, 'a', 'b', 'c'), { recursive: true });
  watcher = new WorkspaceWatcher(createLogger('silent'));
  events = [];
  watcher.onChange((e) => events.push(e));
  const guard = new PathGuard(WorkspaceConfigSchema.parse({ path: root, blockedPaths: ['secrets'] }));
  await watcher.add('w', guard);
});
afterEach(async () => {
  watcher.close();
  await rm(root, { recursive: true, force: true });
});

const seen = (rel: string) => waitFor(() => events.some((e) => e.path === rel), { what: `a change of ${rel}`, timeoutMs: 20_000 });

describe('WorkspaceWatcher', () => {
  it('thousands of files created at once neither hold the event loop nor go unreported', async () => {
    // Node's own recursive watch on Linux re-read the folder synchronously for every new file:
    // 2,000 files held the event loop for about 17 s.
    const dir = path.join(root, 'a', 'b', 'c');
    for (let i = 0; i < 2000; i++) writeFileSync(path.join(dir, `f${i}.txt`), 'x');
    const start = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 0));
    await new Promise((resolve) => setTimeout(resolve, 0));
    // Well below the 17 s the loop was held, with room for a loaded machine.
    expect(Date.now() - start).toBeLessThan(8000);
    await seen('a/b/c/f1999.txt');
    await seen('a/b/c/f0.txt');
  }, 60_000);

  it('watches folders created after the start, and reports nothing from a blocked one', async () => {
    await mkdir(path.join(root, 'new', 'deeper'), { recursive: true });
    await seen('new');
    // The new folders' watches start on their rename events: retry until one is in place.
    await waitFor(
      async () => {
        await writeFile(path.join(root, 'new', 'deeper', 'x.txt'), String(Date.now()));
        return events.some((e) => e.path === 'new/deeper/x.txt');
      },
      { what: 'a change inside a folder created after the start', timeoutMs: 10_000 },
    );
    mkdirSync(path.join(root, 'secrets', 'inner'), { recursive: true });
    writeFileSync(path.join(root, 'secrets', 'inner', 'key.txt'), 'SECRET');
    await writeFile(path.join(root, 'after.txt'), 'x');
    await seen('after.txt');
    expect(events.some((e) => e.path.startsWith('secrets'))).toBe(false);
  });

  it('follows folders moved, deleted and made again, without reporting a folder as its own child', async () => {
    await rename(path.join(root, 'a'), path.join(root, 'z'));
    await seen('z');
    await waitFor(
      async () => {
        await writeFile(path.join(root, 'z', 'b', 'x.txt'), String(Date.now()));
        return events.some((e) => e.path === 'z/b/x.txt');
      },
      { what: 'a change inside a moved folder' },
    );
    await rm(path.join(root, 'z'), { recursive: true });
    await mkdir(path.join(root, 'z', 'b'), { recursive: true });
    await waitFor(
      async () => {
        await writeFile(path.join(root, 'z', 'b', 'y.txt'), String(Date.now()));
        return events.some((e) => e.path === 'z/b/y.txt');
      },
      { what: 'a change inside a folder deleted and made again' },
    );
    // A moved or deleted folder's own watch reports it under its name: that is not `a/a`.
    const paths = events.map((e) => e.path);
    for (const wrong of ['a/a', 'a/b/b', 'z/z', 'z/b/b', 'a/b/x.txt']) expect(paths).not.toContain(wrong);
  });
});
