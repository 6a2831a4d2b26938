import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { PathGuard } from './PathGuard.js';
import { listFiles, readFile, writeFile } from './workspaceFs.js';

/**
 * With `followSymlinks`, a link inside the root is followed to its real path, whose folders are
 * not pinned: a local process that swaps one of them for a link to outside, over and over, must
 * never get a read, a write or a listing outside the root (docs/workspaces.md). Each case runs
 * while a child process keeps swapping `r0` with a link to `outside` (two renames, a window in
 * which `r0` is the link), and counts what it got.
 */
let base: string;
let root: string;
let outside: string;
beforeEach(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'aib-race-'));
  root = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  mkdirSync(path.join(root, 'r0', 'r1'), { recursive: true });
  mkdirSync(path.join(outside, 'r1'), { recursive: true });
  writeFileSync(path.join(root, 'r0', 'r1', 'f.txt'), 'inside');
  writeFileSync(path.join(outside, 'r1', 'f.txt'), 'OUTSIDE');
  writeFileSync(path.join(outside, 'r1', 'outside-only.txt'), 'OUTSIDE');
  symlinkSync('r0/r1/f.txt', path.join(root, 'link.txt'));
  symlinkSync('r0/r1', path.join(root, 'ldir'));
  symlinkSync(outside, path.join(root, 'r0x'));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** Swap `r0` and the link `r0x` for `ms`; resolves when the swapping child exited. */
function swapping(ms: number): Promise<void> {
  const script = `const fs = require('node:fs'); const [a, b, t] = process.argv.slice(1); const end = Date.now() + ${ms};
    while (Date.now() < end) { try { fs.renameSync(a, t); fs.renameSync(b, a); fs.renameSync(a, b); fs.renameSync(t, a); } catch {} }`;
  const child = spawn(process.execPath, ['-e', script, path.join(root, 'r0'), path.join(root, 'r0x'), path.join(root, 'r0tmp')], {
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.on('exit', () => resolve()));
}

async function whileSwapping(ms: number, attempt: () => Promise<'inside' | 'outside'>): Promise<Record<string, number>> {
  const tally: Record<string, number> = { inside: 0, outside: 0, refused: 0 };
  let done = false;
  const swapped = swapping(ms).then(() => (done = true));
  while (!done) {
    try {
      tally[await attempt()]!++;
    } catch {
      tally.refused!++;
    }
  }
  await swapped;
  return tally;
}

describe('followSymlinks under a folder swap race', () => {
  const guard = () => new PathGuard(WorkspaceConfigSchema.parse({ path: root, followSymlinks: true }));

  it('a read through a followed link never returns a file outside the root', async () => {
    const g = guard();
    const tally = await whileSwapping(1500, async () =>
      (await readFile(g, 'link.txt', 'utf8')).content === 'OUTSIDE' ? 'outside' : 'inside',
    );
    expect(tally.outside, JSON.stringify(tally)).toBe(0);
    expect(tally.inside! + tally.refused!).toBeGreaterThan(50);
  }, 20_000);

  it('a listing of a followed directory never shows a name from outside the root', async () => {
    const g = guard();
    const tally = await whileSwapping(1500, async () =>
      (await listFiles(g, 'ldir', { recursive: false, includeDirectories: true })).some((p) => p.includes('outside-only'))
        ? 'outside'
        : 'inside',
    );
    expect(tally.outside, JSON.stringify(tally)).toBe(0);
  }, 20_000);

  it('a write through a followed link never replaces a file outside the root', async () => {
    const g = guard();
    await whileSwapping(1500, async () => {
      await writeFile(g, 'link.txt', 'WRITTEN', 'utf8');
      return 'inside';
    });
    expect(readFileSync(path.join(outside, 'r1', 'f.txt'), 'utf8')).toBe('OUTSIDE');
  }, 20_000);
});

describe('followSymlinks: links that fan out', () => {
  it('a recursive listing through links that double at every level stops at its work cap, not after 2^depth folders', async () => {
    // d0 … d24, each holding two links (a, b) to the next: no loop, 2^24 paths, no files to list.
    for (let i = 0; i <= 24; i++) mkdirSync(path.join(base, 'fan', `d${i}`), { recursive: true });
    for (let i = 0; i < 24; i++) for (const l of ['a', 'b']) symlinkSync(`../d${i + 1}`, path.join(base, 'fan', `d${i}`, l));
    const g = new PathGuard(WorkspaceConfigSchema.parse({ path: path.join(base, 'fan'), followSymlinks: true }));
    const listing = listFiles(g, 'd0', { recursive: true, includeDirectories: false, maxEntries: 1000 });
    await expect(listing).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
  }, 20_000);
});
