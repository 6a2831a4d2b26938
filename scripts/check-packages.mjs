#!/usr/bin/env node
// Part of `pnpm test`: pack the published packages as they would be published and check each
// tarball with publint (--strict) and attw (--profile esm-only: the packages are ESM only, so
// CommonJS `require` resolutions are not checked). Also refuses manifests that still carry
// `workspace:` ranges or the `ai-backend-source` condition, and files that are tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packPackages, ROOT } from './packPackages.mjs';

const dest = mkdtempSync(path.join(os.tmpdir(), 'ai-backend-pack-'));
const bin = (name) => path.join(ROOT, 'node_modules', '.bin', name);
let failed = false;
try {
  const tarballs = packPackages(dest);
  for (const [dir, tgz] of Object.entries(tarballs)) {
    const manifest = execFileSync('tar', ['-xOzf', tgz, 'package/package.json'], { encoding: 'utf8' });
    const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).split('\n');
    const problems = [];
    if (manifest.includes('workspace:')) problems.push('a workspace: range in package.json');
    if (manifest.includes('ai-backend-source')) problems.push('the ai-backend-source condition in package.json');
    if (files.some((f) => /\.test\.|__tests__|\/src\//.test(f))) problems.push('test or source files in the tarball');
    if (!files.includes('package/LICENSE')) problems.push('no LICENSE');
    for (const [tool, args] of [
      ['publint', ['run', tgz, '--strict']],
      ['attw', [tgz, '--profile', 'esm-only']],
    ]) {
      try {
        execFileSync(bin(tool), args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
      } catch (err) {
        problems.push(`${tool}:\n${err.stdout}${err.stderr}`);
      }
    }
    if (problems.length) {
      failed = true;
      console.error(`packages/${dir}: ${problems.join('; ')}`);
    } else console.log(`packages/${dir}: ${path.basename(tgz)} ok (publint --strict, attw esm-only, manifest, files)`);
  }
} finally {
  rmSync(dest, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
