// `node scripts/sbom.mjs <out.json>` (or `pnpm sbom <out.json>`): a CycloneDX SBOM of what
// `npm i ai-backend` installs from this release, dev dependencies left out. The four published
// packages are packed with pnpm (in CI, those packed once for the run: AI_BACKEND_TEST_PACKED; the
// ranges users get, not `workspace:`/`catalog:`, which npm's own `sbom` cannot read in this
// repository), installed into an empty app as a lockfile only (no
// download, no install script), and `npm sbom --sbom-format cyclonedx` (npm's built-in, npm 10+)
// describes that tree. Needs the registry for resolution, as a user's install does; the SBOM lists
// the versions resolved at that moment, so produce it at release, next to `changeset publish`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packedPackages } from './packPackages.mjs';

const NAMES = { core: '@ai-backend/core', auth: '@ai-backend/auth', transports: '@ai-backend/transports', cli: 'ai-backend' };

/** Writes the SBOM to `out` and returns it parsed. */
export function writeSbom(out) {
  const work = mkdtempSync(path.join(tmpdir(), 'ai-backend-sbom-'));
  try {
    const tarballs = packedPackages(work);
    const app = path.join(work, 'app');
    const fileOf = (dir) => `file:${tarballs[dir]}`;
    // `overrides`: ai-backend's exact `@ai-backend/*` versions are not on the registry before the
    // publish; the packed tarballs stand in for them.
    const manifest = {
      name: 'ai-backend-sbom',
      version: '0.0.0',
      private: true,
      dependencies: { 'ai-backend': fileOf('cli') },
      overrides: Object.fromEntries(['core', 'auth', 'transports'].map((d) => [NAMES[d], fileOf(d)])),
    };
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2));
    const npm = (args) =>
      execFileSync('npm', args, { cwd: app, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
    npm(['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error']);
    const sbom = JSON.parse(npm(['sbom', '--sbom-format', 'cyclonedx', '--package-lock-only', '--omit', 'dev']));
    writeFileSync(out, `${JSON.stringify(sbom, null, 2)}\n`);
    return sbom;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = path.resolve(process.argv[2] ?? 'sbom.cdx.json');
  const sbom = writeSbom(out);
  console.log(`${out}: CycloneDX ${sbom.specVersion}, ${sbom.components?.length ?? 0} components`);
}
