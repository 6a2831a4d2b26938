// Where a default server's start-up goes, phase by phase (bench/servers/startupPhases.mjs: Node's
// bootstrap, what the hand-written tRPC server also loads, then each of our packages,
// createServer, the runtime, listening), median of N alternating starts per tree.
//
// Usage: node bench/startupPhases.mjs [starts, default 15]
// BASE=<another built checkout> adds that tree (before/after in one run); the phase script is
// copied into it when it has none (a checkout older than this bench).
import { execFile } from 'node:child_process';
import { copyFile, access } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadAverage } from './lib.mjs';

const starts = Number(process.argv[2] ?? 15);
const root = fileURLToPath(new URL('..', import.meta.url));
const script = 'bench/servers/startupPhases.mjs';
const trees = {
  ours: root,
  ...(process.env.BASE ? { [`ours (${path.basename(process.env.BASE)})`]: path.resolve(process.env.BASE) } : {}),
};
for (const tree of Object.values(trees))
  await access(path.join(tree, script)).catch(() => copyFile(path.join(root, script), path.join(tree, script)));

const loadBefore = await loadAverage();
const runs = Object.fromEntries(Object.keys(trees).map((n) => [n, []]));
for (let i = 0; i < starts; i++) {
  for (const [name, tree] of Object.entries(trees)) {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(tree, script)], { cwd: tree });
    runs[name].push(JSON.parse(stdout.trim().split('\n').at(-1)));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const phases = Object.keys(runs.ours[0]);
const ours = phases.slice(phases.indexOf('core'));
console.log(
  `\n## Start-up phases (median of ${starts}, ms; node ${process.version}, load average ${loadBefore} → ${await loadAverage()})\n`,
);
console.log(`| tree | ${phases.join(' | ')} | ours in all (core → listen) |`);
console.log(`|---|${phases.map(() => '---|').join('')}---|`);
for (const [name, rs] of Object.entries(runs)) {
  const total = median(rs.map((r) => ours.reduce((s, k) => s + r[k], 0)));
  console.log(`| ${name} | ${phases.map((k) => median(rs.map((r) => r[k])).toFixed(1)).join(' | ')} | ${total.toFixed(1)} |`);
}
