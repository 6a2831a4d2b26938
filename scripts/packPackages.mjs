// Pack every published package with pnpm (npm would leave `workspace:*` ranges and the
// source-only `ai-backend-source` export condition in the manifests; pnpm rewrites both,
// the latter from publishConfig.exports). Used by check-packages.mjs and the install smoke test.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PUBLISHED = ['core', 'auth', 'transports', 'cli'];
// Under `pnpm test` reuse the running pnpm (npx would resolve it again for every package).
const viaPnpm = process.env.npm_execpath?.includes('pnpm');
const PNPM = viaPnpm ? [process.execPath, [process.env.npm_execpath]] : ['npx', ['-y', 'pnpm@10.34.9']];

/** Pack each published package into `dest` (built dist must exist); returns name → tarball path. */
export function packPackages(dest) {
  const out = {};
  for (const dir of PUBLISHED) {
    const before = new Set(readdirSync(dest));
    execFileSync(PNPM[0], [...PNPM[1], 'pack', '--pack-destination', dest], { cwd: path.join(ROOT, 'packages', dir), stdio: ['ignore', 'ignore', 'pipe'] });
    const made = readdirSync(dest).find((f) => f.endsWith('.tgz') && !before.has(f));
    if (!made) throw new Error(`pnpm pack produced no tarball for packages/${dir}`);
    out[dir] = path.join(dest, made);
  }
  return out;
}

// `node scripts/packPackages.mjs [dest]` (or `pnpm pack-packages [dest]`): the four published
// packages only. `pnpm -r pack` packs every workspace package, the private ones too (test-utils,
// tools/*): pnpm has no setting that skips them in recursive pack, unlike `pnpm -r publish`.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dest = path.resolve(process.argv[2] ?? '.');
  for (const tgz of Object.values(packPackages(dest))) console.log(tgz);
}
