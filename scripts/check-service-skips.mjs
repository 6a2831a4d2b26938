#!/usr/bin/env node
// Runs the suites that use the shared service detection (packages/test-utils/src/services) as a
// newcomer's machine would see them: no Redis, no PostgreSQL, no redis-server or PostgreSQL server
// binaries, no Chromium. Every one of them must skip through the detection and the run must end
// green with the one summary line. Which files: scripts/serviceSuites.mjs, from their imports (a
// file that never asks for a service has nothing to skip); test/scripts/serviceSuites.test.ts
// fails when a test file names a service (a port, a driver, a storage type) without going through
// the detection, so none is left out. `--all` runs the whole suite instead.
//
// Where it can (root, util-linux `unshare`), the run goes into a fresh network namespace with only
// loopback up, so even the machine's own services on 127.0.0.1 are out of reach: pointing the
// probes at dead ports alone would not catch a suite that ignores the probe and dials 6379.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serviceSuites } from './serviceSuites.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = {
  ...process.env,
  AI_BACKEND_TEST_REDIS: '127.0.0.1:1',
  AI_BACKEND_TEST_REDIS_SERVER: '/nonexistent/redis-server',
  AI_BACKEND_TEST_POSTGRES_URL: 'postgres://postgres@127.0.0.1:1/test',
  AI_BACKEND_TEST_POSTGRES_BIN: '/nonexistent/postgresql/bin',
  AI_BACKEND_TEST_CHROMIUM: '/nonexistent/chromium',
};
delete env.AI_BACKEND_REQUIRE_SERVICES;

// The install tests install the packed tarballs and npm 12 itself from the npm registry, the SBOM
// test resolves the packed packages against it, and the audit and pack tests' `npx -y pnpm@…` ask it for
// pnpm: a newcomer's machine reaches it but the network namespace below does not. They run in
// every other suite run (install-npm12 cuts the network itself, after its installs).
const NEEDS_REGISTRY = [
  'test/e2e/install-smoke.test.ts',
  'test/e2e/install-npm12.test.ts',
  'test/e2e/sbom.test.ts',
  'test/e2e/audit.test.ts',
  'test/scripts/packPackages.test.ts',
];
const all = process.argv.includes('--all');
const files = all ? [] : serviceSuites().filter((f) => !NEEDS_REGISTRY.includes(f));
const vitest = [
  'vitest',
  'run',
  ...NEEDS_REGISTRY.flatMap((f) => ['--exclude', f]),
  ...process.argv.slice(2).filter((a) => a !== '--all'),
  ...files,
];
const isolated = process.getuid?.() === 0 && spawnSync('unshare', ['-n', 'true']).status === 0;
const [cmd, args] = isolated ? ['unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec npx "$@"', 'sh', ...vitest]] : ['npx', vitest];
console.log(
  `check-service-skips: ${all ? 'the whole suite' : `${files.length} suites that use the service detection`}, every service unreachable (${isolated ? 'own network namespace + dead ports' : 'dead ports only; run as root for a network namespace'})`,
);

const run = spawnSync(cmd, args, { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 256 * 1024 * 1024 });
process.stdout.write(run.stdout ?? '');
// One summary per group of vitest projects (sequence.groupOrder: the chaos test runs alone after the
// rest, vitest.config.ts), each from its own globalSetup teardown: read them all.
const summary = [...(run.stdout ?? '').matchAll(/Skipped for missing services: .*/g)].map((m) => m[0]).join('\n') || undefined;
const problems = [];
if (run.status !== 0)
  problems.push(`vitest exited with ${run.status ?? run.signal}: a suite needs a service without going through the detection`);
if (!summary) problems.push('no "Skipped for missing services" line: the skip summary is missing');
else
  for (const name of ['redis', 'postgres', 'postgres-server', 'chromium'])
    if (!summary.includes(`${name} (`)) problems.push(`the summary does not name ${name}`);
if (problems.length > 0) {
  console.error(`check-service-skips FAILED:\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(`check-service-skips: green with every service missing\n${summary}`);
