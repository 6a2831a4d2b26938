/**
 * Packing skips the private workspace packages (issue 36: `pnpm -r pack` packed test-utils and
 * tools/* too). The documented path, `pnpm pack-packages` (scripts/packPackages.mjs, also used by
 * check-packages, the SBOM and the install tests), packs exactly the packages without
 * `"private": true`; `pnpm -r pack`, which pnpm cannot make skip them, is stopped by each private
 * package's `prepack` (scripts/refusePack.mjs) before it writes that tarball, with a message naming
 * the documented command.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script (no types)
import { publishedPackages, ROOT, workspacePackages } from '../../scripts/packPackages.mjs';

const dest = mkdtempSync(path.join(tmpdir(), 'ai-backend-pack-test-'));
afterAll(() => rmSync(dest, { recursive: true, force: true }));

type Manifest = { name: string; private?: boolean; scripts?: Record<string, string> };
const workspace = workspacePackages() as Record<string, Manifest>;
const privateOnes = Object.entries(workspace).filter(([, m]) => m.private === true);
const PNPM = ['npx', '-y', 'pnpm@10.34.9'];

it('the published packages are the workspace packages without "private": true', () => {
  expect(Object.keys(workspace)).toEqual(expect.arrayContaining(['packages/core', 'packages/test-utils', 'tools/mcp-conformance']));
  expect([...(publishedPackages() as string[])].sort()).toEqual(['auth', 'cli', 'core', 'transports']);
  expect(privateOnes.map(([dir]) => dir).sort()).toEqual(['packages/test-utils', 'tools/mcp-conformance']);
  for (const [dir, m] of privateOnes) expect(m.scripts?.prepack, dir).toBe('node ../../scripts/refusePack.mjs');
});

it('pnpm pack-packages writes the four published tarballs and none of a private package', () => {
  const out = path.join(dest, 'documented');
  const r = spawnSync(process.execPath, ['scripts/packPackages.mjs', out], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  expect(r.status, r.stderr).toBe(0);
  expect(readdirSync(out).sort()).toEqual([
    'ai-backend-0.1.0.tgz',
    'ai-backend-auth-0.1.0.tgz',
    'ai-backend-core-0.1.0.tgz',
    'ai-backend-transports-0.1.0.tgz',
  ]);
}, 240_000);

it('pnpm -r pack writes no tarball of a private package and names the documented command', () => {
  const out = path.join(dest, 'recursive');
  const r = spawnSync(PNPM[0]!, [...PNPM.slice(1), '-r', 'pack', '--pack-destination', out], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 240_000,
  });
  const text = `${r.stdout}${r.stderr}`;
  expect(r.status, text).not.toBe(0);
  expect(text).toMatch(
    /@ai-backend\/(test-utils|tool-mcp-conformance) is private and never published: not packed\. To pack the published packages: npx -y pnpm@10\.34\.9 pack-packages/,
  );
  let made: string[] = [];
  try {
    made = readdirSync(out);
  } catch {
    // pnpm stopped before creating the folder
  }
  expect(made.filter((f) => /test-utils|tool-mcp-conformance/.test(f))).toEqual([]);
}, 240_000);

it('pnpm pack inside a private package is refused', () => {
  const [dir] = privateOnes[0]!;
  const r = spawnSync(PNPM[0]!, [...PNPM.slice(1), 'pack', '--pack-destination', path.join(dest, 'single')], {
    cwd: path.join(ROOT, dir),
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(r.status).not.toBe(0);
  expect(`${r.stdout}${r.stderr}`).toContain(`${workspace[dir]!.name} is private and never published: not packed`);
}, 120_000);
