import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { createBenchTree } from '@ai-backend/test-utils';
import { PathGuard } from './PathGuard.js';
import { listFiles } from './workspaceFs.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'aib-bench-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

it('createBenchTree makes exactly the files listFiles then finds', async () => {
  const tree = await createBenchTree(root, 1234, { filesPerDir: 50, dirsPerDir: 5 });
  expect(tree.files).toBe(1234);
  expect(new Set(tree.paths).size).toBe(1234);
  const guard = new PathGuard(WorkspaceConfigSchema.parse({ path: root }));
  const listed = await listFiles(guard, '', { recursive: true, includeDirectories: false });
  expect(listed.sort()).toEqual([...tree.paths].sort());
  const withDirs = await listFiles(guard, '', { recursive: true, includeDirectories: true });
  expect(withDirs.length).toBe(1234 + tree.dirs);
});
