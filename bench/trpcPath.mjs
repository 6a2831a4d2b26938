// Our tRPC path against a hand-written tRPC v11 server on Hono (bench/servers/bare-trpc.mjs),
// everything in ONE run (issue 21): req/s and server CPU per request for GET /trpc/mcp.echo (a
// query) and POST /trpc/bench.echo (a mutation with a JSON body) (default server, memory storage, no auth), cold start (spawn → first 200
// from /health) and
// idle RSS after start, for both.
//
// Usage: node bench/trpcPath.mjs [seconds per load, default 5] [rounds, default 3] [cold starts, default 7]
// BASE=<another built checkout> adds that tree's server as "ours (BASE)": before/after in one run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { coldStart, cpuSeconds, load, loadAverage, rssMb, startServer } from './lib.mjs';

const duration = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const starts = Number(process.argv[4] ?? 7);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const root = here('..');
const trees = {
  ours: root,
  ...(process.env.BASE ? { [`ours (${path.basename(process.env.BASE)})`]: path.resolve(process.env.BASE) } : {}),
};
const config = JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } });
const loadBefore = await loadAverage();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every server runs at once, so all see the same machine; each round loads them in A B C C B A order.
const servers = { 'hand-written': await startServer(here('./servers/bare-trpc.mjs')) };
for (const [name, tree] of Object.entries(trees))
  servers[name] = await startServer(path.join(tree, 'bench/servers/ai-backend.mjs'), [config]);
await sleep(1000);
// Idle RSS: after start, before any request.
const idle = {};
for (const [name, s] of Object.entries(servers)) idle[name] = await rssMb(s.pid);
const echo = (url) => url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } }));
for (const [name, s] of Object.entries(servers)) {
  const body = await (await fetch(echo(s.url))).json();
  if (body.result?.data?.json?.message !== 'hi') throw new Error(`${name}: unexpected answer ${JSON.stringify(body)}`);
}
const names = Object.keys(servers);
const routes = {
  'GET query': (url) => ({ url: echo(url) }),
  'POST mutation': (url) => ({ url: url + '/trpc/bench.echo', method: 'POST', body: JSON.stringify({ json: { message: 'hi' } }) }),
};
// A BASE build from before the bench server had its custom mutation is measured on the query only.
const serves = Object.fromEntries(names.map((n) => [n, new Set(['GET query'])]));
for (const [name, s] of Object.entries(servers)) {
  const r = routes['POST mutation'](s.url);
  const body = await (await fetch(r.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: r.body })).json();
  if (body.result?.data?.json?.message === 'hi') serves[name].add('POST mutation');
  else if (name === 'hand-written' || name === 'ours') {
    for (const x of Object.values(servers)) await x.stop();
    throw new Error(`${name}: unexpected mutation answer ${JSON.stringify(body)}`);
  }
}
const tot = Object.fromEntries(Object.keys(routes).flatMap((route) => names.map((n) => [`${route} ${n}`, { n: 0, cpu: 0, s: 0, bad: 0 }])));
const measure = async (route, name) => {
  const s = servers[name];
  const c0 = await cpuSeconds(s.pid);
  const r = await load({ ...routes[route](s.url), duration, warmup: 0 });
  const c1 = await cpuSeconds(s.pid);
  const t = tot[`${route} ${name}`];
  Object.assign(t, { n: t.n + r.total, cpu: t.cpu + (c1 - c0), s: t.s + duration, bad: t.bad + r.errors });
};
for (const [name, s] of Object.entries(servers))
  for (const route of serves[name]) await load({ ...routes[route](s.url), duration: 2, warmup: 0 });
for (let r = 0; r < rounds; r++)
  for (const route of Object.keys(routes))
    for (const name of [...names, ...[...names].reverse()]) if (serves[name].has(route)) await measure(route, name);
for (const s of Object.values(servers)) await s.stop();

// Cold start, alternating: the hand-written server; ours from the bench script (memory storage);
// and the CLI users run (`ai-backend serve`, no config: the embedded SQLite store) in an empty folder.
const kinds = [['hand-written', () => coldStart([here('./servers/bare-trpc.mjs')])]];
for (const [name, tree] of Object.entries(trees)) {
  kinds.push([`${name}: bench script, memory`, () => coldStart([path.join(tree, 'bench/servers/ai-backend.mjs'), config])]);
  kinds.push([
    `${name}: \`ai-backend serve\`, sqlite`,
    async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'aib-cold-'));
      const s = await coldStart([path.join(tree, 'packages/cli/bin/ai-backend.js'), 'serve', '--port', '0'], { cwd: dir });
      await sleep(1000);
      s.rss = await rssMb(s.pid);
      const stop = s.stop;
      s.stop = async () => (await stop(), await rm(dir, { recursive: true, force: true }));
      return s;
    },
  ]);
}
const cold = Object.fromEntries(kinds.map(([n]) => [n, { ms: [], cpu: [], rss: [] }]));
for (let i = 0; i < starts; i++) {
  for (const [name, start] of kinds) {
    const s = await start();
    cold[name].ms.push(s.ms);
    cold[name].cpu.push(s.cpuMs);
    if (s.rss) cold[name].rss.push(s.rss);
    await s.stop();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const per = (key) => ({ rps: tot[key].n / tot[key].s, cpu: (tot[key].cpu * 1e6) / tot[key].n });
console.log(
  `\n## tRPC path (GET /trpc/mcp.echo and POST /trpc/bench.echo, 50 connections, ${rounds} rounds of ${duration}s per server and route, node ${process.version}, load average ${loadBefore} → ${await loadAverage()})\n`,
);
console.log(
  '| route | server | req/s | server CPU µs/req | req/s vs hand-written | CPU/req vs hand-written | idle RSS MB (before any request) | errors |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const route of Object.keys(routes)) {
  const hw = per(`${route} hand-written`);
  for (const name of names.filter((n) => serves[n].has(route))) {
    const x = per(`${route} ${name}`);
    console.log(
      `| ${route} | ${name} | ${Math.round(x.rps)} | ${Math.round(x.cpu)} | ${(x.rps / hw.rps).toFixed(2)}x | ${(x.cpu / hw.cpu).toFixed(2)}x | ${idle[name]} | ${tot[`${route} ${name}`].bad} |`,
    );
  }
}
console.log(
  `\n| cold start (median of ${starts}) | spawn → first 200 from /health, ms | CPU used by then, ms | RSS 1 s after that /health, MB |`,
);
console.log('|---|---|---|---|');
for (const [name, c] of Object.entries(cold))
  console.log(`| ${name} | ${Math.round(median(c.ms))} | ${Math.round(median(c.cpu))} | ${c.rss.length ? median(c.rss) : '-'} |`);
