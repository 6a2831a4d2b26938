#!/usr/bin/env node
// Usage: node scripts/testCpu.mjs <log> [--top N]
// Sums up the CPU log that test/cpuPerFile.ts writes with AI_BACKEND_TEST_CPU_LOG=<log>: the total,
// the package tests' and the end-to-end tests' shares, and the files that cost the most CPU
// (docs/testing.md, "CI: phases and times").
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [logFile] = process.argv.slice(2).filter((a) => !a.startsWith('--') && !/^\d+$/.test(a));
if (!logFile) {
  console.error('usage: node scripts/testCpu.mjs <log> [--top N]');
  process.exit(2);
}
const topIndex = process.argv.indexOf('--top');
const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 25;
const perFile = new Map();
for (const line of readFileSync(logFile, 'utf8').split('\n')) {
  if (!line) continue;
  const { file, cpuMs } = JSON.parse(line);
  const name = path.relative(process.cwd(), file).split(path.sep).join('/');
  perFile.set(name, (perFile.get(name) ?? 0) + cpuMs);
}
const rows = [...perFile].sort((a, b) => b[1] - a[1]);
const sum = (pred) => rows.filter(([f]) => pred(f)).reduce((s, [, ms]) => s + ms, 0) / 1000;
const total = sum(() => true);
console.log(
  `${rows.length} files, ${total.toFixed(1)} s CPU: package tests ${sum((f) => f.startsWith('packages/')).toFixed(1)} s, the rest ${sum((f) => !f.startsWith('packages/')).toFixed(1)} s`,
);
for (const [f, ms] of rows.slice(0, top))
  console.log(`${(ms / 1000).toFixed(1).padStart(7)} s  ${((ms / 1000 / total) * 100).toFixed(1).padStart(5)} %  ${f}`);
