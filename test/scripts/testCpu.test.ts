/**
 * scripts/testCpu.mjs sums up the log test/cpuPerFile.ts writes (AI_BACKEND_TEST_CPU_LOG): one JSON
 * line per test file run, a file run twice (a retry) counted once with both runs' time.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script (no types)
import { ROOT } from '../../scripts/packPackages.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'ai-backend-test-cpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('totals the log, splits package tests from the rest, and lists the costliest files first', () => {
  const log = path.join(dir, 'cpu.log');
  const line = (file: string, cpuMs: number) => JSON.stringify({ file: path.join(ROOT, file), cpuMs });
  writeFileSync(
    log,
    `${[
      line('packages/core/src/lib/a.test.ts', 1_000),
      line('test/e2e/b.test.ts', 6_000),
      line('packages/core/src/lib/a.test.ts', 500), // the same file again (a retried run)
      line('test/e2e/c.test.ts', 2_500),
    ].join('\n')}\n`,
  );
  const r = spawnSync(process.execPath, ['scripts/testCpu.mjs', log, '--top', '2'], { cwd: ROOT, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const lines = r.stdout.trim().split('\n');
  expect(lines[0]).toBe('3 files, 10.0 s CPU: package tests 1.5 s, the rest 8.5 s');
  expect(lines.slice(1)).toEqual([
    expect.stringMatching(/^ +6\.0 s +60\.0 % +test\/e2e\/b\.test\.ts$/),
    expect.stringMatching(/^ +2\.5 s +25\.0 % +test\/e2e\/c\.test\.ts$/),
  ]);
});

it('without a log file it says how to call it and exits 2', () => {
  const r = spawnSync(process.execPath, ['scripts/testCpu.mjs'], { cwd: ROOT, encoding: 'utf8' });
  expect(r.status).toBe(2);
  expect(r.stderr).toContain('usage: node scripts/testCpu.mjs <log>');
});
