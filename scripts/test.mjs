#!/usr/bin/env node
// The README's test command after its build (`pnpm test`, package.json): the static checks (lint
// and format, long comments, both type checks, the package checks), one after the other as before,
// and the whole vitest suite beside them instead of after them (docs/testing.md, "CI: phases and
// times"). The checks run on one core (tsc is single-threaded) and took about 130 s of CPU on the
// two-core CI machine, one core idle meanwhile; the checks get a lower priority (nice 10), so the
// tests' timing never waits on them. A failed check stops the run at once, as the old `&&` chain
// did: its output is printed and vitest is stopped. Otherwise each check's output is printed after
// the suite's, and the exit code is vitest's. Arguments go to `vitest run`, as before.
//
// Usage: node scripts/test.mjs [vitest arguments]
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env, PATH: `${path.join(root, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}` };
const TSC7 = 'node_modules/typescript7/bin/tsc';
const CHECKS = [
  ['biome', 'check', '.'],
  ['node', 'scripts/wrapLongComments.mjs', '--check'],
  // TypeScript 7 (the native compiler, `typescript7` in package.json) type-checks: the same verdict
  // as 5.9's on this tree for about 0.6x its CPU (docs/testing.md); the packages' builds use it too.
  ['node', TSC7, '-p', 'tsconfig.json'],
  ['node', TSC7, '-p', 'packages/transports/console/tsconfig.json'],
  ['node', 'scripts/check-packages.mjs'],
];

const vitest = spawn('vitest', ['run', ...process.argv.slice(2)], { cwd: root, env, stdio: 'inherit' });
const vitestDone = new Promise((resolve) => vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

/** Runs one check with its output kept; resolves with its exit code and output. */
function check(argv) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      setPriority(child.pid, 10);
    } catch {
      // not allowed here: the check runs at the tests' priority
    }
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ code: 1, out: `${out}${err.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

const reports = [];
const checksDone = (async () => {
  for (const argv of CHECKS) {
    const t0 = Date.now();
    const { code, out } = await check(argv);
    const report = `== ${argv.join(' ').replace(`node ${TSC7}`, 'tsc7')}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`}, ${((Date.now() - t0) / 1000).toFixed(1)} s ==\n${out}`;
    if (code !== 0) return report;
    reports.push(report);
  }
  return undefined;
})();

const failed = await Promise.race([checksDone, vitestDone.then(() => checksDone)]);
if (failed) {
  vitest.kill('SIGTERM');
  await vitestDone;
  process.stdout.write(`\n${reports.join('')}${failed}`);
  console.error('test: a static check failed (the test run was stopped if it was still going)');
  process.exit(1);
}
const code = await vitestDone;
process.stdout.write(`\n${reports.join('')}`);
process.exit(code);
