#!/usr/bin/env node
// Usage: node scripts/testDurations.mjs <vitest JSON report> [--top N]
// Reads a report of a whole-suite run (`npx vitest run --reporter=json --outputFile=report.json`) and
// writes test/durations.json: each test file's duration in ms, which test/slowFirstSequencer.ts uses
// to start the longest files first on a checkout without vitest's own cache (a clean clone in CI).
// Also prints the slowest files and tests (docs/testing.md, "CI: phases and times"). Only the order
// of the files depends on it; a stale or missing list never changes what runs.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [reportFile] = process.argv.slice(2).filter((a) => !a.startsWith('--') && !/^\d+$/.test(a));
if (!reportFile) {
  console.error('usage: node scripts/testDurations.mjs <vitest JSON report> [--top N]');
  process.exit(2);
}
const topIndex = process.argv.indexOf('--top');
const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 25;
const report = JSON.parse(readFileSync(reportFile, 'utf8'));

const files = report.testResults
  .map((r) => ({
    file: path.relative(root, r.name).split(path.sep).join('/'),
    ms: Math.round(r.endTime - r.startTime),
    tests: r.assertionResults,
  }))
  .sort((a, b) => b.ms - a.ms);
writeFileSync(
  path.join(root, 'test/durations.json'),
  `${JSON.stringify({ files: Object.fromEntries(files.map((f) => [f.file, f.ms])) }, null, 2)}\n`,
);

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
console.log(`${report.numTotalTests} tests in ${files.length} files; file time ${s(files.reduce((n, f) => n + f.ms, 0))}`);
console.log(`\nslowest ${top} files:`);
for (const f of files.slice(0, top)) console.log(`  ${s(f.ms).padStart(8)}  ${f.file} (${f.tests.length} tests)`);
const tests = files.flatMap((f) => f.tests.map((t) => ({ file: f.file, name: t.fullName ?? t.title, ms: t.duration ?? 0 })));
console.log(`\nslowest ${top} tests:`);
for (const t of tests.sort((a, b) => b.ms - a.ms).slice(0, top)) console.log(`  ${s(t.ms).padStart(8)}  ${t.file} > ${t.name}`);
