// Our tRPC path against a hand-written tRPC v11 server on Hono (bench/servers/bare-trpc.mjs),
// everything in ONE run (issue 21): req/s and server CPU per request for GET /trpc/mcp.echo
// (default server, memory storage, no auth), cold start (spawn → first 200 from /health) and
// idle RSS after start, for both.
// Usage: node bench/trpcPath.mjs [seconds per load, default 5] [rounds, default 3] [cold starts, default 7]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { coldStart, cpuSeconds, load, loadAverage, rssMb, startServer } from './lib.mjs';

const duration = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const starts = Number(process.argv[4] ?? 7);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const config = { storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } };
const loadBefore = await loadAverage();

// Both servers run at once, so both see the same machine; each round loads them in A B B A order.
const servers = {
  'hand-written': await startServer(here('./servers/bare-trpc.mjs')),
  ours: await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]),
};
const echo = (url) => url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } }));
const idle = {};
for (const [name, s] of Object.entries(servers)) {
  const body = await (await fetch(echo(s.url))).json();
  if (body.result?.data?.json?.message !== 'hi') throw new Error(`${name}: unexpected answer ${JSON.stringify(body)}`);
  idle[name] = await rssMb(s.pid);
}
const tot = { 'hand-written': { n: 0, cpu: 0, s: 0, bad: 0 }, ours: { n: 0, cpu: 0, s: 0, bad: 0 } };
const measure = async (name) => {
  const s = servers[name];
  const c0 = await cpuSeconds(s.pid);
  const r = await load({ url: echo(s.url), duration, warmup: 0 });
  const c1 = await cpuSeconds(s.pid);
  Object.assign(tot[name], { n: tot[name].n + r.total, cpu: tot[name].cpu + (c1 - c0), s: tot[name].s + duration, bad: tot[name].bad + r.errors });
};
for (const s of Object.values(servers)) await load({ url: echo(s.url), duration: 2, warmup: 0 });
for (let r = 0; r < rounds; r++) for (const name of ['hand-written', 'ours', 'ours', 'hand-written']) await measure(name);
for (const s of Object.values(servers)) await s.stop();

// Cold start, alternating: the hand-written server, ours from the bench script (memory storage),
// and the CLI users run (`ai-backend serve` with no config: the embedded SQLite store) in an empty folder.
const cli = here('../packages/cli/bin/ai-backend.js');
const cold = { 'hand-written': [], 'ours (bench script, memory)': [], 'ours (ai-backend serve, sqlite)': [] };
const rssCli = [];
for (let i = 0; i < starts; i++) {
  const a = await coldStart([here('./servers/bare-trpc.mjs')]);
  cold['hand-written'].push(a.ms);
  await a.stop();
  const b = await coldStart([here('./servers/ai-backend.mjs'), JSON.stringify(config)]);
  cold['ours (bench script, memory)'].push(b.ms);
  await b.stop();
  const dir = await mkdtemp(path.join(tmpdir(), 'aib-cold-'));
  const c = await coldStart([cli, 'serve', '--port', '0'], { cwd: dir });
  cold['ours (ai-backend serve, sqlite)'].push(c.ms);
  await new Promise((r) => setTimeout(r, 500));
  rssCli.push(await rssMb(c.pid));
  await c.stop();
  await rm(dir, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const per = (name) => ({ rps: tot[name].n / tot[name].s, cpu: (tot[name].cpu * 1e6) / tot[name].n });
const hw = per('hand-written');
const us = per('ours');
console.log(`\n## tRPC path (GET /trpc/mcp.echo, 50 connections, ${rounds} rounds A B B A of ${duration}s, node ${process.version}, load average ${loadBefore} → ${await loadAverage()})\n`);
console.log('| server | req/s | server CPU µs/req | idle RSS MB | errors |');
console.log('|---|---|---|---|---|');
console.log(`| hand-written tRPC on Hono | ${Math.round(hw.rps)} | ${Math.round(hw.cpu)} | ${idle['hand-written']} | ${tot['hand-written'].bad} |`);
console.log(`| ours | ${Math.round(us.rps)} | ${Math.round(us.cpu)} | ${idle.ours} | ${tot.ours.bad} |`);
console.log(`\nours / hand-written: req/s ${(us.rps / hw.rps).toFixed(2)}x, CPU per request ${(us.cpu / hw.cpu).toFixed(2)}x`);
console.log(`\n| cold start, spawn → first 200 from /health (median of ${starts}) | ms |`);
console.log('|---|---|');
for (const [name, xs] of Object.entries(cold)) console.log(`| ${name} | ${Math.round(median(xs))} |`);
console.log(`\nidle RSS of \`ai-backend serve\` (sqlite) 0.5 s after its first /health: median ${median(rssCli)} MB`);
