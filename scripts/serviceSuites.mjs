#!/usr/bin/env node
// The test files that go through the shared service detection (packages/test-utils/src/services):
// those whose imports, followed through the repository's own files, reach it. CI's offline check
// (scripts/check-service-skips.mjs) runs only these, since a file that never asks for a service
// has nothing to skip; test/scripts/serviceSuites.test.ts checks that no other test file names a service.
// Derived from the imports on every run, so the list cannot fall behind the tests.
//
// Usage: node scripts/serviceSuites.mjs   (prints one path a line, relative to the repository root)
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SERVICES_DIR = path.join(root, 'packages/test-utils/src/services');
/** Workspace specifiers that resolve to the detection (the `./services` export of test-utils). */
const SERVICES_SPECIFIERS = new Set(['@ai-backend/test-utils/services']);

/** Every test file vitest runs (vitest.config.ts `include`), relative to the root. */
export function testFiles() {
  const out = [];
  const walk = (dir, rel) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const abs = path.join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(abs).isDirectory()) walk(abs, r);
      else if (name.endsWith('.test.ts')) out.push(r);
    }
  };
  for (const pkg of readdirSync(path.join(root, 'packages'))) {
    const src = path.join(root, 'packages', pkg, 'src');
    if (existsSync(src)) walk(src, `packages/${pkg}/src`);
  }
  walk(path.join(root, 'test'), 'test');
  walk(path.join(root, 'examples'), 'examples');
  return out.sort();
}

const IMPORT = /(?:\bimport\s*(?:[\w*{}\s,]+from\s*)?|\bexport\s*[\w*{}\s,]*from\s*|\bimport\s*\()\s*['"]([^'"]+)['"]/g;

function resolveRelative(from, spec) {
  const base = path.resolve(path.dirname(from), spec);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** Whether `file`'s import closure (relative imports only; packages are not followed) reaches the detection. */
function makeReaches() {
  const memo = new Map();
  const reaches = (file, stack = new Set()) => {
    if (memo.has(file)) return memo.get(file);
    if (file.startsWith(SERVICES_DIR + path.sep)) return true;
    if (stack.has(file)) return false;
    stack.add(file);
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return false;
    }
    let hit = false;
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1];
      if (SERVICES_SPECIFIERS.has(spec)) hit = true;
      else if (spec.startsWith('.')) {
        const target = resolveRelative(file, spec);
        if (target && reaches(target, stack)) hit = true;
      }
      if (hit) break;
    }
    stack.delete(file);
    memo.set(file, hit);
    return hit;
  };
  return reaches;
}

/** The test files that use the shared service detection, relative to the root. */
export function serviceSuites() {
  const reaches = makeReaches();
  return testFiles().filter((f) => reaches(path.join(root, f)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const f of serviceSuites()) console.log(f);
}
