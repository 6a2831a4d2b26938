/**
 * With AI_BACKEND_TEST_CPU_LOG=<file>, each test file's CPU time is appended to <file> as a JSON line
 * (docs/testing.md, "CI: phases and times"): the worker's own user + system time over the file, plus
 * that of the child processes it started and reaped meanwhile (servers, installs, tsc). vitest
 * reports wall time only, and on a two-core machine running four files at once a file's wall time
 * says how long it waited as much as what it costs. `node scripts/testCpu.mjs <file>` sums it up.
 * Linux only (/proc); without the variable this file does nothing.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';

const log = process.env.AI_BACKEND_TEST_CPU_LOG;

/** CPU milliseconds of this process and of its reaped children (/proc/self/stat, clock ticks of 10 ms). */
function cpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3; utime..cstime are 14..17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) * 10;
}

if (log) {
  // Taken as the setup file runs, before the test file is imported: its imports count too.
  const start = cpuMs();
  let file = '';
  beforeAll(() => {
    file = expect.getState().testPath ?? '';
  });
  afterAll(() => {
    appendFileSync(log, `${JSON.stringify({ file, cpuMs: cpuMs() - start })}\n`);
  });
}
