import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { testFiles } from './scripts/serviceSuites.mjs';
import SlowFirstSequencer from './test/slowFirstSequencer.js';

/**
 * What in a package test needs a module graph of its own (docs/testing.md, "CI: phases and times"):
 * a module mock or a fresh registry (`vi.mock`, `vi.doMock`, `vi.resetModules`, ...), or a stubbed
 * global or environment variable that vitest would put back only at the file's end.
 */
const NEEDS_ISOLATION = /\bvi\.(mock|doMock|unmock|doUnmock|hoisted|resetModules|stubGlobal|stubEnv|importMock|importActual)\b/;
/**
 * What in an end-to-end test needs a process of its own besides that: it measures the process it
 * runs in (heap, CPU, a forced GC: other files' servers and garbage would count), or it registers
 * OpenTelemetry's process-wide providers, which the API lets a process set only once.
 */
const OWNS_PROCESS =
  /\b(memoryUsage|cpuUsage|getHeapStatistics|writeHeapSnapshot|gc\(|setGlobal(Tracer|Meter)Provider|registerInstrumentations)\b/;
const root = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE_TEST = /^packages\/[^/]+\/src\//;
const END_TO_END = /^(test|examples)\//;
const source = (f: string) => readFileSync(path.join(root, f), 'utf8');
const isolatedPackageTests = testFiles().filter((f) => PACKAGE_TEST.test(f) && NEEDS_ISOLATION.test(source(f)));
const isolatedEndToEnd = testFiles().filter((f) => END_TO_END.test(f) && (NEEDS_ISOLATION.test(source(f)) || OWNS_PROCESS.test(source(f))));
/**
 * Files whose claim is a latency bound under faults (the chaos test: every call answers within 1 s
 * while an instance, Redis and PostgreSQL go down), run after everything else, one at a time. On the
 * two-core CI machine, beside three other test files and the static checks, a call's time measured
 * what the other files took of the CPU: the chaos test's own three servers answered in p95 250-840 ms
 * outside the faults, and a few calls near PostgreSQL's restart missed the bound by 20-330 ms on both
 * tries (docs/testing.md, "Tests that run alone").
 */
const RUN_ALONE = ['test/e2e/chaos.test.ts'];

// One run over every package's unit tests (beside the code) and the end-to-end tests in test/.
// The `ai-backend-source` condition makes workspace packages resolve to their TypeScript sources,
// so unit tests do not depend on a fresh build; tests that spawn the CLI use the built bin.
export default defineConfig({
  resolve: { conditions: ['ai-backend-source'] },
  ssr: { resolve: { conditions: ['ai-backend-source'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default is one worker less than the CPUs: one test file at a time on a two-core CI
    // machine. Most files here spend their time waiting on sockets, child processes, PostgreSQL and
    // timers, not on the CPU, so four run at once (docs/testing.md, "CI: phases and times").
    maxWorkers: Math.max(4, availableParallelism() - 1),
    // CI (CI=1) runs the whole suite and then most of it again on three more Node versions, on a
    // shared two-core machine: a test whose timing bound a loaded moment breaks gets one more try
    // there. A retried test is listed in the report, and a test that is really broken fails both
    // tries. Locally nothing is retried.
    retry: process.env.CI ? 1 : 0,
    // Longest files first, also on a clean clone where vitest has no timings of its own yet
    // (test/durations.json): a long file started last would run alone at the end.
    sequence: { sequencer: SlowFirstSequencer },
    // Probes Redis, PostgreSQL, redis-server and Chromium once; suites that need a missing one skip,
    // and the run ends with one line naming it (AI_BACKEND_REQUIRE_SERVICES=1 turns skips into failures).
    globalSetup: ['./packages/test-utils/src/services/servicesGlobalSetup.ts'],
    // Each file's CPU time, only with AI_BACKEND_TEST_CPU_LOG set (test/cpuPerFile.ts).
    setupFiles: ['./test/cpuPerFile.ts'],
    // Projects of one run. The package tests and the end-to-end tests each share a worker's module
    // graph (`isolate: false`): a worker imports the sources once for the many files it runs, instead
    // of once per file (for the package tests about a fifth of the suite's CPU; for the end-to-end
    // files vitest's summed import time fell from about 700 s to 53 s per run). Each file still gets
    // its own test state (hooks, mocks' calls, fake timers are put back after it). A file that mocks
    // a module or stubs a global (NEEDS_ISOLATION), or measures or configures the process it runs in
    // (OWNS_PROCESS), runs `isolated`, one module graph and process per file; the chaos test runs
    // `alone` at the end. A test in a shared project must close what it opens (servers, timers):
    // what it leaves runs on in the worker beside the next files (docs/testing.md).
    projects: [
      {
        extends: true,
        test: {
          name: 'packages',
          sequence: { groupOrder: 0 },
          include: ['packages/*/src/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...isolatedPackageTests],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          sequence: { groupOrder: 0 },
          include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...RUN_ALONE, ...isolatedEndToEnd],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          sequence: { groupOrder: 0 },
          include: [...isolatedPackageTests, ...isolatedEndToEnd],
          exclude: [...configDefaults.exclude, ...RUN_ALONE],
        },
      },
      {
        extends: true,
        test: { name: 'alone', sequence: { groupOrder: 1 }, maxWorkers: 1, include: RUN_ALONE },
      },
    ],
  },
});
