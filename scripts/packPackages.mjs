// Pack every published package with pnpm (npm would leave `workspace:*` ranges and the
// source-only `ai-backend-source` export condition in the manifests; pnpm rewrites both,
// the latter from publishConfig.exports). Used by check-packages.mjs, the SBOM and the install tests.
//
// Published = every workspace package whose manifest is not `"private": true`, as `pnpm -r publish`
// and `changeset publish` decide; the private ones (test-utils, tools/*) are skipped. `pnpm -r pack`
// cannot skip them (pnpm has no such setting for recursive pack), so each private package's
// `prepack` runs refusePack.mjs, which stops it with a message pointing here (scripts/packPackages.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Under `pnpm test` reuse the running pnpm (npx would resolve it again for every package).
const viaPnpm = process.env.npm_execpath?.includes('pnpm');
const PNPM = viaPnpm ? [process.execPath, [process.env.npm_execpath]] : ['npx', ['-y', 'pnpm@10.34.9']];

/** The workspace's packages (pnpm-workspace.yaml's `packages:` globs, `<dir>/*` form): folder → manifest. */
export function workspacePackages() {
  const yaml = readFileSync(path.join(ROOT, 'pnpm-workspace.yaml'), 'utf8');
  const globs = [...(/^packages:\n((?:\s+-.*\n)+)/m.exec(yaml)?.[1] ?? '').matchAll(/-\s*['"]?([^'"\s]+)/g)].map((m) => m[1]);
  const out = {};
  for (const glob of globs) {
    if (!glob.endsWith('/*')) throw new Error(`pnpm-workspace.yaml: packPackages.mjs reads only <dir>/* globs, not ${glob}`);
    const parent = path.join(ROOT, glob.slice(0, -2));
    if (!existsSync(parent)) continue;
    for (const e of readdirSync(parent, { withFileTypes: true })) {
      const file = path.join(parent, e.name, 'package.json');
      if (e.isDirectory() && existsSync(file)) out[path.relative(ROOT, path.dirname(file))] = JSON.parse(readFileSync(file, 'utf8'));
    }
  }
  return out;
}

/** The published packages' folders under packages/ (`core`, `auth`, `transports`, `cli`): the non-private ones. */
export function publishedPackages() {
  return Object.entries(workspacePackages())
    .filter(([, manifest]) => manifest.private !== true)
    .map(([dir]) => {
      if (!dir.startsWith('packages/')) throw new Error(`${dir} is published (no "private": true) but is not under packages/`);
      return dir.slice('packages/'.length);
    });
}

/** Pack each published package into `dest` (created if missing; built dist must exist); returns folder name → tarball path. */
export function packPackages(dest) {
  mkdirSync(dest, { recursive: true });
  const out = {};
  for (const dir of publishedPackages()) {
    const before = new Set(readdirSync(dest));
    execFileSync(PNPM[0], [...PNPM[1], 'pack', '--pack-destination', dest], {
      cwd: path.join(ROOT, 'packages', dir),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const made = readdirSync(dest).find((f) => f.endsWith('.tgz') && !before.has(f));
    if (!made) throw new Error(`pnpm pack produced no tarball for packages/${dir}`);
    out[dir] = path.join(dest, made);
  }
  return out;
}

/** The list `--manifest` writes into the destination: folder name → tarball path, as packPackages returns. */
const MANIFEST = 'packed.json';

/**
 * The published packages as tarballs, for the install tests: those CI packed once for the whole run
 * (`AI_BACKEND_TEST_PACKED`, a folder `--manifest` filled after the build) when set, else packed into
 * `dest` now. A tarball does not depend on the Node that packs it (pnpm copies the built dist and
 * rewrites the manifest), so one pack serves every Node version CI tests (docs/testing.md).
 */
export function packedPackages(dest) {
  const shared = process.env.AI_BACKEND_TEST_PACKED;
  if (!shared) return packPackages(dest);
  const file = path.join(shared, MANIFEST);
  if (!existsSync(file))
    throw new Error(`AI_BACKEND_TEST_PACKED=${shared} has no ${MANIFEST}: fill it with node scripts/packPackages.mjs --manifest <dir>`);
  const out = JSON.parse(readFileSync(file, 'utf8'));
  for (const [dir, tgz] of Object.entries(out)) {
    if (!existsSync(tgz)) throw new Error(`${file}: the tarball of packages/${dir} is gone (${tgz})`);
  }
  return out;
}

// `node scripts/packPackages.mjs [--manifest] [dest]` (or `pnpm pack-packages [dest]`): the published
// packages only; `--manifest` also writes dest/packed.json for AI_BACKEND_TEST_PACKED.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const manifest = args.includes('--manifest');
  const dest = path.resolve(args.find((a) => a !== '--manifest') ?? '.');
  const packed = packPackages(dest);
  if (manifest) writeFileSync(path.join(dest, MANIFEST), `${JSON.stringify(packed, null, 2)}\n`);
  for (const tgz of Object.values(packed)) console.log(tgz);
}
