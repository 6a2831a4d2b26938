import { execFileSync } from 'node:child_process';
import {
  chmod,
  mkdir,
  mkdtemp,
  readFile as fsRead,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile as fsWrite,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema, type WorkspaceConfigInput } from '../../config/sections/workspaces.js';
import { PathGuard } from './PathGuard.js';
import { expectCode } from './__tests__/testFs.js';
import { listFiles, pathExists, readFile, writeFile } from './workspaceFs.js';

let base: string;
let root: string;
const guardFor = (extra: Partial<WorkspaceConfigInput> = {}) => new PathGuard(WorkspaceConfigSchema.parse({ path: root, ...extra }));

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'aib-guard-'));
  root = path.join(base, 'root');
  await mkdir(path.join(root, 'sub', 'deep'), { recursive: true });
  await fsWrite(path.join(root, 'notes.txt'), 'hello');
  await fsWrite(path.join(root, 'sub', 'a.md'), '# a');
  await fsWrite(path.join(root, 'sub', 'deep', 'b.json'), '{}');
  await mkdir(path.join(base, 'root_evil'));
  await fsWrite(path.join(base, 'root_evil', 'secret.txt'), 'SECRET');
  await fsWrite(path.join(base, 'secret.txt'), 'SECRET');
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('rule 1: containment', () => {
  it('reads inside the root and refuses the sibling-prefix directory', async () => {
    const g = guardFor();
    expect((await readFile(g, 'notes.txt', 'utf8')).content).toBe('hello');
    await expectCode(readFile(g, '../root_evil/secret.txt', 'utf8'), 'ACCESS_DENIED');
    await expectCode(readFile(g, `${root}_evil/secret.txt`, 'utf8'), 'ACCESS_DENIED');
  });

  it('realpaths the root itself: a symlinked or trailing-slash root works', async () => {
    await symlink(root, path.join(base, 'rootlink'));
    const viaLink = new PathGuard(WorkspaceConfigSchema.parse({ path: path.join(base, 'rootlink') }));
    expect((await readFile(viaLink, 'sub/a.md', 'utf8')).content).toBe('# a');
    const trailing = new PathGuard(WorkspaceConfigSchema.parse({ path: root + '/' }));
    expect(await pathExists(trailing, 'sub/deep/b.json')).toEqual({ exists: true, path: 'sub/deep/b.json' });
  });

  it('a missing root is "not accessible", not a path error', async () => {
    const g = new PathGuard(WorkspaceConfigSchema.parse({ path: path.join(base, 'nope') }));
    await expectCode(readFile(g, 'x.txt', 'utf8'), 'UNAVAILABLE');
  });

  it('not found only for allowed paths; blocked paths look the same whether they exist or not', async () => {
    await fsWrite(path.join(root, '.env'), 'X=1');
    const g = guardFor({ blockedPaths: ['**/.env'] });
    await expectCode(readFile(g, 'missing.txt', 'utf8'), 'NOT_FOUND');
    const existing = await expectCode(readFile(g, '.env', 'utf8'), 'ACCESS_DENIED');
    const missing = await expectCode(readFile(g, 'sub/.env', 'utf8'), 'ACCESS_DENIED');
    expect(existing.message).toBe('access denied');
    expect(missing.message).toBe(existing.message);
    expect(existing.details).toBeUndefined();
    expect(missing.details).toBeUndefined();
    await expectCode(pathExists(g, '.env'), 'ACCESS_DENIED');
    await expectCode(pathExists(g, 'sub/.env'), 'ACCESS_DENIED');
  });
});

describe('rule 2: readOnly', () => {
  it('refuses writes (no file, no folder created) and still reads', async () => {
    const g = guardFor({ readOnly: true });
    const err = await expectCode(writeFile(g, 'new/dir/x.txt', 'x', 'utf8'), 'ACCESS_DENIED');
    expect(err.details).toEqual({ reason: 'workspace is read-only' });
    await expectCode(writeFile(g, 'notes.txt', 'changed', 'utf8'), 'ACCESS_DENIED');
    expect(await fsRead(path.join(root, 'notes.txt'), 'utf8')).toBe('hello');
    await expect(stat(path.join(root, 'new'))).rejects.toThrow();
    expect((await readFile(g, 'notes.txt', 'utf8')).content).toBe('hello');
  });

  it('writes when not readOnly', async () => {
    const g = guardFor();
    expect(await writeFile(g, 'notes.txt', 'changed', 'utf8')).toEqual({ success: true, path: 'notes.txt', size: 7 });
    expect(await fsRead(path.join(root, 'notes.txt'), 'utf8')).toBe('changed');
  });
});

describe('rule 3: paths', () => {
  it('allowedPaths limits reads, writes, exists and listings', async () => {
    const g = guardFor({ allowedPaths: ['sub/**'] });
    expect((await readFile(g, 'sub/a.md', 'utf8')).content).toBe('# a');
    await expectCode(readFile(g, 'notes.txt', 'utf8'), 'ACCESS_DENIED');
    await expectCode(writeFile(g, 'other.txt', 'x', 'utf8'), 'ACCESS_DENIED');
    expect((await writeFile(g, 'sub/new.txt', 'x', 'utf8')).success).toBe(true);
    expect(await listFiles(g, '', { recursive: true, includeDirectories: true })).toEqual([
      'sub/',
      'sub/a.md',
      'sub/deep/',
      'sub/deep/b.json',
      'sub/new.txt',
    ]);
  });

  it('listFiles never lists blocked entries nor descends into blocked folders', async () => {
    await mkdir(path.join(root, 'private'));
    await fsWrite(path.join(root, 'private', 'p.txt'), 'p');
    await fsWrite(path.join(root, 'sub', '.env'), 'X');
    const g = guardFor({ blockedPaths: ['private', '**/.env'] });
    const all = await listFiles(g, '', { recursive: true, includeDirectories: true });
    expect(all).toEqual(['notes.txt', 'sub/', 'sub/a.md', 'sub/deep/', 'sub/deep/b.json']);
    await expectCode(listFiles(g, 'private', { recursive: false, includeDirectories: true }), 'ACCESS_DENIED');
  });
});

describe('rule 4: extensions', () => {
  it('allowedExtensions hides other files everywhere: read, exists, list', async () => {
    const g = guardFor({ allowedExtensions: ['.md'] });
    expect((await readFile(g, 'sub/a.md', 'utf8')).content).toBe('# a');
    await expectCode(readFile(g, 'notes.txt', 'utf8'), 'ACCESS_DENIED');
    // An existing but unreachable file does not exist for the caller (same as a missing one).
    expect(await pathExists(g, 'notes.txt')).toEqual({ exists: false, path: 'notes.txt' });
    expect(await pathExists(g, 'missing.txt')).toEqual({ exists: false, path: 'missing.txt' });
    expect(await listFiles(g, '', { recursive: true, includeDirectories: false })).toEqual(['sub/a.md']);
    await expectCode(listFiles(g, 'notes.txt', { recursive: false, includeDirectories: true }), 'NOT_FOUND');
  });

  it('blockedExtensions checks double extensions and case', async () => {
    await fsWrite(path.join(root, 'x.env.txt'), 'A=1');
    const g = guardFor({ blockedExtensions: ['.env'] });
    await expectCode(readFile(g, 'x.env.txt', 'utf8'), 'ACCESS_DENIED');
    await expectCode(writeFile(g, 'y.ENV', 'x', 'utf8'), 'ACCESS_DENIED');
    expect(await listFiles(g, '', { recursive: false, includeDirectories: false })).toEqual(['notes.txt']);
  });
});

describe('rule 5: maxFileSize', () => {
  it('refuses larger files on read and write (decoded size for base64)', async () => {
    await fsWrite(path.join(root, 'big.bin'), Buffer.alloc(11));
    await fsWrite(path.join(root, 'ten.bin'), Buffer.alloc(10));
    const g = guardFor({ maxFileSize: 10 });
    const err = await expectCode(readFile(g, 'big.bin', 'base64'), 'ACCESS_DENIED');
    expect(err.details).toEqual({ reason: 'file too large', maxFileSize: 10 });
    expect((await readFile(g, 'ten.bin', 'base64')).size).toBe(10);
    await expectCode(writeFile(g, 'w.txt', 'x'.repeat(11), 'utf8'), 'ACCESS_DENIED');
    // 16 base64 characters decode to 12 bytes (> 10); 12 characters decode to 9 bytes.
    await expectCode(writeFile(g, 'w.bin', Buffer.alloc(12).toString('base64'), 'base64'), 'ACCESS_DENIED');
    expect((await writeFile(g, 'w.bin', Buffer.alloc(9).toString('base64'), 'base64')).size).toBe(9);
    expect(await listFiles(g, '', { recursive: false, includeDirectories: false })).toEqual(['notes.txt', 'ten.bin', 'w.bin']);
  });
});

describe('rule 6: symlinks', () => {
  beforeEach(async () => {
    await symlink('notes.txt', path.join(root, 'inside-link'));
    await symlink('sub', path.join(root, 'sub-link'));
    await symlink('../secret.txt', path.join(root, 'out-link'));
    await symlink('..', path.join(root, 'out-dir'));
    await symlink('../root_evil', path.join(root, 'evil-dir'));
  });

  it('followSymlinks false: any symlink component is refused, links are not listed', async () => {
    const g = guardFor();
    for (const p of ['inside-link', 'sub-link/a.md', 'out-link', 'out-dir/secret.txt', 'evil-dir/secret.txt']) {
      await expectCode(readFile(g, p, 'utf8'), 'ACCESS_DENIED');
      await expectCode(writeFile(g, p, 'pwned', 'utf8'), 'ACCESS_DENIED');
    }
    await expectCode(listFiles(g, 'sub-link', { recursive: true, includeDirectories: true }), 'ACCESS_DENIED');
    expect(await listFiles(g, '', { recursive: false, includeDirectories: true })).toEqual(['notes.txt', 'sub/']);
  });

  it('followSymlinks true: links inside work, links leaving the root never do', async () => {
    const g = guardFor({ followSymlinks: true });
    expect((await readFile(g, 'inside-link', 'utf8')).content).toBe('hello');
    expect((await readFile(g, 'sub-link/a.md', 'utf8')).content).toBe('# a');
    for (const p of ['out-link', 'out-dir/secret.txt', 'evil-dir/secret.txt', 'out-dir/root_evil/secret.txt']) {
      await expectCode(readFile(g, p, 'utf8'), 'ACCESS_DENIED');
      await expectCode(writeFile(g, p, 'pwned', 'utf8'), 'ACCESS_DENIED');
    }
    const listed = await listFiles(g, '', { recursive: true, includeDirectories: true });
    expect(listed).toContain('sub-link/deep/b.json');
    expect(listed).toContain('inside-link');
    expect(listed.some((p) => p.startsWith('out-') || p.startsWith('evil-'))).toBe(false);
    expect(await fsRead(path.join(base, 'secret.txt'), 'utf8')).toBe('SECRET');
  });

  it('a followed link to a blocked file is refused (policy on the resolved path too)', async () => {
    await fsWrite(path.join(root, '.env'), 'X=1');
    await symlink('.env', path.join(root, 'alias.txt'));
    const g = guardFor({ followSymlinks: true, blockedPaths: ['**/.env'] });
    await expectCode(readFile(g, 'alias.txt', 'utf8'), 'ACCESS_DENIED');
    expect(await listFiles(g, '', { recursive: false, includeDirectories: false })).not.toContain('alias.txt');
  });

  it('write through an in-root link replaces the target and keeps the link', async () => {
    const g = guardFor({ followSymlinks: true });
    await writeFile(g, 'inside-link', 'via link', 'utf8');
    expect(await fsRead(path.join(root, 'notes.txt'), 'utf8')).toBe('via link');
    expect(await readlink(path.join(root, 'inside-link'))).toBe('notes.txt');
  });

  it('write through a dangling symlink is refused, whatever followSymlinks says', async () => {
    await symlink('../created.txt', path.join(root, 'dangling'));
    await symlink('nowhere-inside.txt', path.join(root, 'dangling-in'));
    for (const followSymlinks of [false, true]) {
      const g = guardFor({ followSymlinks });
      await expectCode(writeFile(g, 'dangling', 'pwned', 'utf8'), 'ACCESS_DENIED');
      await expectCode(writeFile(g, 'dangling-in', 'x', 'utf8'), 'ACCESS_DENIED');
    }
    await expect(stat(path.join(base, 'created.txt'))).rejects.toThrow();
    await expect(stat(path.join(root, 'nowhere-inside.txt'))).rejects.toThrow();
  });

  it('symlink loops do not hang listings', async () => {
    await symlink('.', path.join(root, 'sub', 'self'));
    const g = guardFor({ followSymlinks: true });
    const listed = await listFiles(g, 'sub', { recursive: true, includeDirectories: false });
    expect(listed).toContain('sub/a.md');
    expect(listed.length).toBeLessThan(20);
  });

  it.skipIf(process.platform !== 'linux')('a parent swapped for a symlink after the check is not followed (pinned directory)', async () => {
    const g = guardFor();
    const target = await g.prepareWrite('sub/raced.txt', 3);
    try {
      await rename(path.join(root, 'sub'), path.join(root, 'sub-moved'));
      await symlink(base, path.join(root, 'sub'));
      await fsWrite(`${target.parent.base}/${target.name}`, 'won');
    } finally {
      await target.parent.close();
    }
    await expect(stat(path.join(base, 'raced.txt'))).rejects.toThrow();
    expect(await fsRead(path.join(root, 'sub-moved', 'raced.txt'), 'utf8')).toBe('won');
  });
});

describe('file operations', () => {
  it('writeFile creates parent folders, leaves no temp file and keeps permissions', async () => {
    const g = guardFor();
    expect(await writeFile(g, 'a/b/c.txt', 'deep', 'utf8')).toEqual({ success: true, path: 'a/b/c.txt', size: 4 });
    expect(await fsRead(path.join(root, 'a', 'b', 'c.txt'), 'utf8')).toBe('deep');
    await chmod(path.join(root, 'notes.txt'), 0o600);
    await writeFile(g, './notes.txt', 'again', 'utf8');
    expect((await stat(path.join(root, 'notes.txt'))).mode & 0o777).toBe(0o600);
    expect((await readdir(root)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    await expectCode(writeFile(g, 'sub', 'x', 'utf8'), 'BAD_REQUEST');
    await expectCode(writeFile(g, 'notes.txt/x.txt', 'x', 'utf8'), 'BAD_REQUEST');
  });

  it('encodings round-trip every byte; malformed input is refused', async () => {
    const g = guardFor();
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await writeFile(g, 'all.bin', bytes.toString('base64'), 'base64');
    expect(Buffer.from((await readFile(g, 'all.bin', 'base64')).content, 'base64')).toEqual(bytes);
    const binary = await readFile(g, 'all.bin', 'binary');
    expect(binary).toMatchObject({ size: 256, encoding: 'binary', mimeType: 'application/octet-stream' });
    expect(Buffer.from(binary.content, 'latin1')).toEqual(bytes);
    await writeFile(g, 'copy.bin', binary.content, 'binary');
    expect(await fsRead(path.join(root, 'copy.bin'))).toEqual(bytes);
    await expectCode(writeFile(g, 'x.bin', 'not base64!', 'base64'), 'BAD_REQUEST');
    await expectCode(writeFile(g, 'x.bin', 'snowman ☃', 'binary'), 'BAD_REQUEST');
    expect(await readFile(g, 'sub/a.md', 'utf8')).toEqual({ content: '# a', size: 3, encoding: 'utf8', mimeType: 'text/markdown' });
    await expectCode(readFile(g, 'sub', 'utf8'), 'BAD_REQUEST');
  });

  it('listFiles: relative to the root, folders with "/", sorted, capped', async () => {
    const g = guardFor();
    expect(await listFiles(g, '', { recursive: false, includeDirectories: true })).toEqual(['notes.txt', 'sub/']);
    expect(await listFiles(g, 'sub', { recursive: true, includeDirectories: false })).toEqual(['sub/a.md', 'sub/deep/b.json']);
    await expectCode(listFiles(g, '', { recursive: true, includeDirectories: true, maxEntries: 2 }), 'PAYLOAD_TOO_LARGE');
    await expectCode(listFiles(g, 'missing', { recursive: false, includeDirectories: true }), 'NOT_FOUND');
    await expectCode(listFiles(g, 'notes.txt', { recursive: false, includeDirectories: true }), 'BAD_REQUEST');
    const aborted = AbortSignal.abort();
    await expectCode(listFiles(g, '', { recursive: true, includeDirectories: true, signal: aborted }), 'CANCELLED');
  });

  it('listFiles leaves out names readFile would refuse', async () => {
    for (const name of ['colon:name.txt', 'back\\slash.txt', 'new\nline.txt', 'trailing.', '%2e%2e'])
      await fsWrite(path.join(root, 'sub', name), 'x');
    const g = guardFor();
    expect(await listFiles(g, 'sub', { recursive: false, includeDirectories: true })).toEqual(['sub/a.md', 'sub/deep/']);
  });

  it.skipIf(process.platform === 'win32')('special files (FIFO) are neither listed nor opened', async () => {
    try {
      execFileSync('mkfifo', [path.join(root, 'pipe')]);
    } catch {
      return; // no mkfifo on this system
    }
    const g = guardFor();
    await expectCode(readFile(g, 'pipe', 'utf8'), 'ACCESS_DENIED');
    expect(await listFiles(g, '', { recursive: false, includeDirectories: false })).toEqual(['notes.txt']);
    expect(await pathExists(g, 'pipe')).toEqual({ exists: false, path: 'pipe' });
  });
});
