import { mkdir, mkdtemp, rm, writeFile as fsWrite } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { PathGuard } from './PathGuard.js';
import { MAX_PATH_DEPTH, normalizeRelative } from './pathSyntax.js';
import { expectCode } from './__tests__/testFs.js';
import { listFiles, pathExists, readFile, writeFile } from './workspaceFs.js';

let root: string;
// The blocked patterns of the docs' example: each one is matched against every parent folder.
const guard = () => new PathGuard(WorkspaceConfigSchema.parse({ path: root, blockedPaths: ['**/.env', '**/.git', 'secrets'] }));
const nested = (components: number) => `${'d/'.repeat(components - 1)}f.txt`;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'aib-depth-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('rule 1: path depth', () => {
  it('accepts up to MAX_PATH_DEPTH components and refuses more, however short the path', () => {
    expect(normalizeRelative(nested(MAX_PATH_DEPTH))).toBe(nested(MAX_PATH_DEPTH));
    expect(normalizeRelative(nested(MAX_PATH_DEPTH + 1))).toBeNull();
    // 2,048 components within the 4,096-character limit: checking it used to take ~0.3 s.
    expect(normalizeRelative(`${'a/'.repeat(2047)}b`)).toBeNull();
    // Dropped `.` components and repeated slashes do not count.
    expect(normalizeRelative(`${'./'.repeat(500)}${nested(MAX_PATH_DEPTH)}`)).toBe(nested(MAX_PATH_DEPTH));
  });

  it('every file procedure refuses a too-deep path as access denied, and serves the deepest allowed one', async () => {
    const g = guard();
    const deep = `${'a/'.repeat(2047)}b`;
    await expectCode(readFile(g, deep, 'utf8'), 'ACCESS_DENIED');
    await expectCode(writeFile(g, deep, 'x', 'utf8'), 'ACCESS_DENIED');
    await expectCode(pathExists(g, deep), 'ACCESS_DENIED');
    await expectCode(listFiles(g, deep, { recursive: false, includeDirectories: true }), 'ACCESS_DENIED');
    await expectCode(writeFile(g, nested(MAX_PATH_DEPTH + 1), 'x', 'utf8'), 'ACCESS_DENIED');

    expect(await writeFile(g, nested(MAX_PATH_DEPTH), 'deepest', 'utf8')).toMatchObject({ success: true });
    expect((await readFile(g, nested(MAX_PATH_DEPTH), 'utf8')).content).toBe('deepest');
  });

  it('a listing from a subfolder leaves out paths deeper than readFile accepts', async () => {
    // Made outside the procedures, which cannot create it: two levels too deep.
    const dirs = 'd/'.repeat(MAX_PATH_DEPTH + 1);
    await mkdir(path.join(root, dirs), { recursive: true });
    await fsWrite(path.join(root, dirs, 'f.txt'), 'too deep');
    await fsWrite(path.join(root, 'd/'.repeat(MAX_PATH_DEPTH - 1), 'f.txt'), 'deepest');
    const g = guard();
    const listed = await listFiles(g, 'd/d', { recursive: true, includeDirectories: true });
    expect(listed).toContain(nested(MAX_PATH_DEPTH));
    for (const rel of listed) {
      expect(rel.replace(/\/$/, '').split('/').length).toBeLessThanOrEqual(MAX_PATH_DEPTH);
      if (!rel.endsWith('/')) expect((await readFile(g, rel, 'utf8')).content).toBe('deepest');
    }
  });
});
