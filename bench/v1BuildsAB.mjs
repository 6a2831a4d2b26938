// Gateway CPU per /v1 call, two builds side by side (issue 41):
//   node bench/v1BuildsAB.mjs <dirA> <dirB> [rounds=8] [calls per round=2000] [connections=50]
// Each dir is a built checkout (e.g. `git worktree add /tmp/A <commit>`, then `pnpm install` there: `prepare` builds).
// One canned OpenAI upstream (bench/servers/canned-openai.mjs); per build one server with the pass-through fast path on,
// memory store, JWT auth. Cases: POST /v1/chat/completions BYOK and metered (memory), plain and `stream: true`. Both
// servers are loaded in turn A B / B A within each round, so both see the same machine; the figure is the server's own
// CPU per call (user + system, /proc/<pid>/stat), robust to the neighbours' load, where req/s is not.
// AB_STORE=sqlite: each server on a SQLite file of its own instead of the memory store (the metered cases then
// show what that store adds); AB_CASES=BYOK,metered picks cases by name prefix. With connections=1 the calls
// are sequential, so the figures also show what one call's latency pays for.
import { createRequire } from 'node:module';
import path from 'node:path';
import { cpuSeconds, creditTokens, startServer, v1ServerConfig } from './lib.mjs';

const [dirA, dirB, rounds = '8', perRound = '2000', conns = '50'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node bench/v1BuildsAB.mjs <dirA> <dirB> [rounds] [calls per round] [connections]');
const req = createRequire(path.resolve(dirA, 'bench/lib.mjs'));
const autocannon = req('autocannon');
const { mintDevToken } = await import(req.resolve('@ai-backend/auth'));

const SECRET = 'bench-v1-builds-ab-jwt-secret-0123456789';
const upstream = await startServer(path.resolve(dirA, 'bench/servers/canned-openai.mjs'));
const children = [upstream.child];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });
const store = process.env.AB_STORE ?? 'memory';

const servers = {};
for (const [name, dir] of [
  ['A', dirA],
  ['B', dirB],
]) {
  const s = await startServer(path.resolve(dir, 'bench/servers/ai-backend.mjs'), [
    JSON.stringify(v1ServerConfig(upstream.url, SECRET, store)),
  ]);
  children.push(s.child);
  await creditTokens(s.url, admin);
  servers[name] = s;
}

const body = (stream) =>
  JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'Say ok.' }], ...(stream ? { stream } : {}) });
const allCases = [
  { name: 'BYOK', headers: { 'x-provider-api-key': 'sk-bench-byok' }, stream: false },
  { name: 'BYOK stream', headers: { 'x-provider-api-key': 'sk-bench-byok' }, stream: true },
  { name: `metered (${store})`, headers: {}, stream: false },
  { name: `metered (${store}) stream`, headers: {}, stream: true },
];
const picked = process.env.AB_CASES?.split(',');
const cases = picked ? allCases.filter((c) => picked.some((p) => c.name.startsWith(p))) : allCases;
const opts = (s, c, amount) => ({
  url: s.url + '/v1/chat/completions',
  method: 'POST',
  connections: Number(conns),
  amount,
  headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, ...c.headers },
  body: body(c.stream),
});
// Each server's first answers are checked to be the fast path's, then both are warmed on every case.
for (const [name, s] of Object.entries(servers))
  for (const c of cases) {
    const r = await fetch(s.url + '/v1/chat/completions', { method: 'POST', headers: opts(s, c).headers, body: body(c.stream) });
    const text = await r.text();
    if (r.status !== 200 || r.headers.get('x-ai-backend-path') !== 'pass-through')
      throw new Error(`${name} ${c.name}: ${r.status} ${text.slice(0, 200)}`);
  }
for (const c of cases) for (const s of Object.values(servers)) await autocannon(opts(s, c, 1500));

const totals = {};
for (let round = 0; round < Number(rounds); round++)
  for (const c of cases) {
    const order = round % 2 ? ['B', 'A'] : ['A', 'B'];
    for (const name of order) {
      const s = servers[name];
      const c0 = await cpuSeconds(s.pid);
      const r = await autocannon(opts(s, c, Number(perRound)));
      const used = (await cpuSeconds(s.pid)) - c0;
      const t = (totals[`${c.name}|${name}`] ??= { calls: 0, cpu: 0, bad: 0, perRound: [] });
      t.calls += r.requests.total;
      t.cpu += used;
      t.bad += r.non2xx + r.errors + r.timeouts;
      t.perRound.push((used * 1e6) / r.requests.total);
    }
  }

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const lines = [
  `## /v1 gateway CPU per call, two builds (${rounds} rounds x ${perRound} calls, ${conns} connections; node ${process.version})`,
  '',
  `A: ${dirA}  B: ${dirB}`,
  '',
  '| case | A CPU µs/call | B CPU µs/call | B / A (totals) | B / A (median of rounds) | errors A / B |',
  '|---|---|---|---|---|---|',
];
for (const c of cases) {
  const a = totals[`${c.name}|A`];
  const b = totals[`${c.name}|B`];
  const pa = (a.cpu * 1e6) / a.calls;
  const pb = (b.cpu * 1e6) / b.calls;
  const ratios = a.perRound.map((x, i) => b.perRound[i] / x);
  lines.push(
    `| ${c.name} | ${pa.toFixed(0)} | ${pb.toFixed(0)} | ${(pb / pa).toFixed(3)} | ${median(ratios).toFixed(3)} | ${a.bad} / ${b.bad} |`,
  );
}
console.log(lines.join('\n'));
for (const s of Object.values(servers)) await s.stop();
await upstream.stop();
