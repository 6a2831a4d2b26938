// Idle RSS of a default server (bench/servers/ai-backend.mjs, memory storage, no auth) against the
// hand-written tRPC server (bench/servers/bare-trpc.mjs), to 0.1 MB (issue 21). Each round starts
// every server at once, so all see the same machine, and reads /proc/<pid>/status 1 s and 3 s after
// each one printed its address, before any request. bench/coldStartNodes.mjs reads RSS after a
// /health answer instead (a request's allocations included), so its ratio runs a little higher.
//
// Usage (after `pnpm build`): [BASE=<another built checkout>] node bench/idleRss.mjs [rounds=6]
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAverage, startServer } from './lib.mjs';

const rounds = Number(process.argv[2] ?? 6);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const config = JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } });
const servers = {
  'hand-written': () => startServer(here('./servers/bare-trpc.mjs')),
  ours: () => startServer(here('./servers/ai-backend.mjs'), [config]),
};
if (process.env.BASE)
  servers[`ours (${path.basename(process.env.BASE)})`] = () =>
    startServer(path.join(path.resolve(process.env.BASE), 'bench/servers/ai-backend.mjs'), [config]);
const rssMb = async (pid) => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const loadBefore = await loadAverage();
const names = Object.keys(servers);
const rss = Object.fromEntries(
  names.flatMap((n) => [
    [`${n} 1`, []],
    [`${n} 3`, []],
  ]),
);
for (let r = 0; r < rounds; r++) {
  const running = await Promise.all(names.map((n) => servers[n]()));
  await sleep(1000);
  for (const [i, s] of running.entries()) rss[`${names[i]} 1`].push(await rssMb(s.pid));
  await sleep(2000);
  for (const [i, s] of running.entries()) rss[`${names[i]} 3`].push(await rssMb(s.pid));
  await Promise.all(running.map((s) => s.stop()));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`;
console.log(`\n## Idle RSS, ${rounds} rounds, node ${process.version}, load average ${loadBefore} → ${await loadAverage()}\n`);
console.log(
  '| server | RSS 1 s after start, MB (median, range) | vs hand-written, per round | RSS 3 s after start, MB (median) | vs hand-written |',
);
console.log('|---|---|---|---|---|');
for (const n of names) {
  const at1 = rss[`${n} 1`],
    at3 = rss[`${n} 3`];
  const ratios = at1.map((x, i) => x / rss['hand-written 1'][i]);
  console.log(
    `| ${n} | ${median(at1).toFixed(1)} (${range(at1)}) | ${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}) | ${median(at3).toFixed(1)} | ${(median(at3) / median(rss['hand-written 3'])).toFixed(3)}x |`,
  );
}
