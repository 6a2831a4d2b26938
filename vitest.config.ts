import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/slowFirstSequencer.js';

// One run over every package's unit tests (beside the code) and the end-to-end tests in test/.
// The `ai-backend-source` condition makes workspace packages resolve to their TypeScript sources,
// so unit tests do not depend on a fresh build; tests that spawn the CLI use the built bin.
export default defineConfig({
  resolve: { conditions: ['ai-backend-source'] },
  ssr: { resolve: { conditions: ['ai-backend-source'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
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
  },
});
