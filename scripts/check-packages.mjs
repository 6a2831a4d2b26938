#!/usr/bin/env node
// Part of `pnpm test`: pack the published packages as they would be published (in CI, the tarballs
// .ci/run packed once after the build: AI_BACKEND_TEST_PACKED, scripts/packPackages.mjs) and check each
// tarball with publint (--strict) and attw (--profile esm-only: the packages are ESM only, so
// CommonJS `require` resolutions are not checked). Also refuses manifests that still carry
// `workspace:` ranges or the `ai-backend-source` condition, a missing LICENSE or README, files that are tests, source maps
// whose sources are not shipped (embedding them is not enough: a debugger or a stack-trace tool
// that follows `sources` finds nothing), and test fixtures in the public API.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packedPackages, ROOT } from './packPackages.mjs';

const dest = mkdtempSync(path.join(os.tmpdir(), 'ai-backend-pack-'));
const bin = (name) => path.join(ROOT, 'node_modules', '.bin', name);
let failed = false;
try {
  const tarballs = packedPackages(dest);
  for (const [dir, tgz] of Object.entries(tarballs)) {
    const manifest = execFileSync('tar', ['-xOzf', tgz, 'package/package.json'], { encoding: 'utf8' });
    const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).split('\n');
    const problems = [];
    if (manifest.includes('workspace:')) problems.push('a workspace: range in package.json');
    if (manifest.includes('catalog:')) problems.push('a catalog: range in package.json');
    if (manifest.includes('ai-backend-source')) problems.push('the ai-backend-source condition in package.json');
    if (files.some((f) => /\.test\.|__tests__/.test(f))) problems.push('test files in the tarball');
    // npm provenance (docs/publishing.md, "Supply chain"): a publish outside a CI that can sign
    // it fails instead of uploading an unattested package.
    if (JSON.parse(manifest).publishConfig?.provenance !== true) problems.push('publishConfig.provenance is not true');
    if (!files.includes('package/LICENSE')) problems.push('no LICENSE');
    // What npm shows on the package page; `ai-backend`'s is the repository README (copied by prepack).
    if (!files.includes('package/README.md')) problems.push('no README.md');
    else if (
      dir === 'cli' &&
      execFileSync('tar', ['-xOzf', tgz, 'package/README.md'], { encoding: 'utf8' }) !== readFileSync(path.join(ROOT, 'README.md'), 'utf8')
    )
      problems.push('README.md is not the repository README');
    problems.push(...inspectContents(tgz, dir));
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
    } else
      console.log(
        `packages/${dir}: ${path.basename(tgz)} ok (publint --strict, attw esm-only, manifest, provenance, LICENSE, README, files, source maps, no fixtures in the API)`,
      );
  }
} finally {
  rmSync(dest, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

/** What publint cannot see: source maps that point at files not in the tarball, and fixtures in the API. */
function inspectContents(tgz, dir) {
  const out = path.join(dest, `unpacked-${dir}`);
  mkdirSync(out);
  execFileSync('tar', ['-xzf', tgz, '-C', out]);
  const root = path.join(out, 'package');
  const problems = [];
  const walk = (d) =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  const all = walk(root);
  const shipped = new Set(all);
  for (const file of all.filter((f) => f.endsWith('.map'))) {
    const map = JSON.parse(readFileSync(file, 'utf8'));
    // `inlined:<package>/<file>`: a dependency bundled into ours (scripts/bundleDist.mjs --inline),
    // whose file is not part of this package; its content must be embedded instead.
    const missing = map.sources.filter((src, i) =>
      src.startsWith('inlined:')
        ? typeof map.sourcesContent?.[i] !== 'string'
        : !shipped.has(path.resolve(path.dirname(file), map.sourceRoot ?? '', src)),
    );
    if (missing.length) problems.push(`${path.relative(root, file)} points at ${missing.join(', ')}, not shipped`);
    // A shipped source's text embedded as well is a second copy of it in every install.
    const doubled = map.sources.filter((src, i) => !src.startsWith('inlined:') && typeof map.sourcesContent?.[i] === 'string');
    if (doubled.length) problems.push(`${path.relative(root, file)} embeds ${doubled.length} shipped source(s) again, e.g. ${doubled[0]}`);
  }
  // Test fixtures live in the private @ai-backend/test-utils, never in a published package's API.
  const fixtures =
    /\b(TRAVERSAL_CORPUS|TRAVERSAL_SECRET|createTraversalFixture|expandCorpus|createBenchTree|createTestUpstream|testRedis|testPostgres|testService|dropTestKeys|waitFor)\b/;
  for (const file of all.filter((f) => f.endsWith('.d.ts'))) {
    const hit = fixtures.exec(readFileSync(file, 'utf8'));
    if (hit) problems.push(`${path.relative(root, file)} mentions the test fixture ${hit[1]}`);
  }
  return problems;
}
