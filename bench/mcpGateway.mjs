// The MCP gateway's cost per call: tools/call `echo` of @modelcontextprotocol/server-everything
// (Streamable HTTP mode) called directly, against the same tool called through our /mcp as
// `web__echo` (our gateway forwarding over its one shared upstream session), same machine, same
// run. Both sides are 2025-11-25 sessions (initialize once, then POSTs with Mcp-Session-Id), in
// A B B A order, averaged. Besides req/s and latency (unreliable on a loaded machine), the CPU per
// call: the upstream's alone (A), and the gateway's plus the upstream's (B), from /proc. L is our
// own tool `greeting` on the same /mcp session of the same gateway process (its CPU alone): B − A − L
// is what forwarding costs the gateway beyond our /mcp's own tools/call at the same concurrency. With
// `BASE=<built checkout>` (or AI_BENCH_BASE), that build's gateway runs as C in the same run
// (A B F L C C L F B A), for before/after. F is the floor (bench/servers/floor-mcp-proxy.mjs): a
// bare Hono proxy that only renames the tool, so every figure is also a ratio to what a Node proxy
// costs on the same machine. After the load rounds, latency the independent way: sequential calls
// from one client in interleaved rounds (A, F, B), the median of per-round (path − direct) medians.
// Run after the build: `node bench/mcpGateway.mjs [seconds per run, default 5] [connections, default 10]`.
import { fileURLToPath } from 'node:url';
import { cpuSeconds, load, loadAverage, startEverythingHttp, startServer, verdict } from './lib.mjs';

const seconds = Number(process.argv[2] ?? 5);
const connections = Number(process.argv[3] ?? 10);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

const { child: upstream, url: upstreamUrl } = await startEverythingHttp();

const gatewayConfig = JSON.stringify({
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'none' } },
  gateway: { allowPrivateNetwork: true },
  mcpServers: { web: { type: 'http', url: upstreamUrl } },
});
const ours = await startServer(here('./servers/ai-backend.mjs'), [gatewayConfig]);
// F, the floor: a bare Hono proxy that only renames the tool and streams the upstream's answer back.
const floor = await startServer(here('./servers/floor-mcp-proxy.mjs'), [JSON.stringify({ upstream: upstreamUrl, prefix: 'web__' })]);
const baseDir = process.env.BASE ?? process.env.AI_BENCH_BASE;
const base = baseDir ? await startServer(`${baseDir}/bench/servers/ai-backend.mjs`, [gatewayConfig]) : undefined;

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
/** A 2025 session at `url`: its id, after initialize and notifications/initialized. */
async function session(url) {
  const init = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  };
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(init) });
  const id = res.headers.get('mcp-session-id');
  await res.text();
  await (
    await fetch(url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return id;
}

/** Wait until a gateway lists the upstream's tools (its shared connection is open); answers its session. */
async function gatewaySession(url) {
  const id = await session(url);
  for (let i = 0; ; i++) {
    const r = await fetch(url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    if ((await r.text()).includes('web__echo')) return id;
    if (i > 100) throw new Error('the gateway never listed web__echo');
    await new Promise((r) => setTimeout(r, 100));
  }
}
const ourUrl = `${ours.url}/mcp`;
const ourSession = await gatewaySession(ourUrl);
const baseUrl = base ? `${base.url}/mcp` : undefined;
const baseSession = base ? await gatewaySession(baseUrl) : undefined;
const upstreamSession = await session(upstreamUrl);
const floorUrl = `${floor.url}/mcp`;
const floorSession = await session(floorUrl);

// Each request its own JSON-RPC id (written by setupRequest before it is sent): in a 2025
// session ids must not repeat, and concurrent calls that share one lose their answers (the
// session routes a response by its id), which made an earlier version of this bench measure
// its own 10 s client timeouts at 10 connections, not the gateway.
const call = (url, sessionId, name, args = { message: 'hello' }) => ({
  url,
  method: 'POST',
  headers: { ...HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
  setupRequest: (r) => {
    r.body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params: { name, arguments: args } });
    return r;
  },
});
let nextId = 1;
const req = {
  A: { ...call(upstreamUrl, upstreamSession, 'echo'), pids: [upstream.pid] },
  B: { ...call(ourUrl, ourSession, 'web__echo'), pids: [ours.pid, upstream.pid] },
  F: { ...call(floorUrl, floorSession, 'web__echo'), pids: [floor.pid, upstream.pid] },
  L: { ...call(ourUrl, ourSession, 'greeting', { name: 'Ada', language: 'de' }), pids: [ours.pid] },
  ...(base ? { C: { ...call(baseUrl, baseSession, 'web__echo'), pids: [base.pid, upstream.pid] } } : {}),
};
const runs = { A: [], B: [], F: [], L: [], C: [] };
const cpu = async (pids) => (await Promise.all(pids.map(cpuSeconds))).reduce((a, b) => a + b, 0);
const order = base ? ['A', 'B', 'F', 'L', 'C', 'C', 'L', 'F', 'B', 'A'] : ['A', 'B', 'F', 'L', 'L', 'F', 'B', 'A'];
// Every path once before the measured rounds (PREWARM=<seconds> at 10 connections, default 5), so
// the first measured round is not the one that pays for V8's compiling.
const prewarm = Number(process.env.PREWARM ?? 5);
if (prewarm > 0) for (const name of new Set(order)) await load({ ...req[name], connections: 10, duration: prewarm, warmup: 0 });
for (const name of order) {
  const { pids, ...options } = req[name];
  await load({ ...options, connections, duration: 1, warmup: 0 });
  const c0 = await cpu(pids);
  const x = await load({ ...options, connections, duration: seconds, warmup: 0 });
  runs[name].push({ ...x, cpuUs: (((await cpu(pids)) - c0) / Math.max(1, x.total)) * 1e6 });
}
// Latency the independent way (as bench/gatewayOverhead.mjs, with its `verdict`): one client,
// sequential calls, rounds that interleave the paths (A, F, B); the figure is the median of the
// per-round (path median − direct median). autocannon's p50 above is in whole milliseconds.
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const PER_ROUND = Number(process.env.PER_ROUND ?? 60);
/** One round of one path: PER_ROUND sequential calls, each one's ms. */
async function sequential(name) {
  const { url, headers, setupRequest } = req[name];
  const times = [];
  for (let i = 0; i < PER_ROUND; i++) {
    const { body } = setupRequest({});
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers, body });
    const text = await res.text();
    times.push(performance.now() - t0);
    if (!text.includes('hello')) throw new Error(`${name}: unexpected answer ${text.slice(0, 200)}`);
  }
  return times;
}
const rounds = { A: [], B: [], F: [] };
for (let r = 0; r < ROUNDS; r++) for (const name of r % 2 ? ['B', 'F', 'A'] : ['A', 'F', 'B']) rounds[name].push(await sequential(name));
const latencyB = verdict(rounds.A, rounds.B);
const latencyF = verdict(rounds.A, rounds.F);
const avg = (xs, k) => xs.reduce((s, x) => s + x[k], 0) / xs.length;
const row = (label, xs) =>
  `| ${label} | ${Math.round(avg(xs, 'rps'))} | ${avg(xs, 'p50').toFixed(2)} | ${avg(xs, 'p99').toFixed(2)} | ${Math.round(avg(xs, 'cpuUs'))} | ${xs.reduce((s, x) => s + x.errors, 0)} |`;
console.log(
  `load average ${await loadAverage()}, ${connections} connections, ${seconds} s per run, ${order.join(' ')}, ${prewarm} s pre-warm per path`,
);
console.log('| path | req/s | p50 ms | p99 ms | CPU µs per call (gateway + upstream) | errors |\n|---|---|---|---|---|---|');
console.log(row('A direct: server-everything echo', runs.A));
console.log(row('B through the gateway: /mcp web__echo', runs.B));
console.log(row('F the floor: a bare Hono proxy renaming the tool (floor + upstream CPU)', runs.F));
console.log(row('L our own tool on the same /mcp session: greeting (gateway CPU only)', runs.L));
if (base) console.log(row(`C through the BASE gateway (${baseDir})`, runs.C));
const summary = (x) =>
  `added p50 ${(avg(runs[x], 'p50') - avg(runs.A, 'p50')).toFixed(2)} ms, added p99 ${(avg(runs[x], 'p99') - avg(runs.A, 'p99')).toFixed(2)} ms, req/s ratio ${(avg(runs[x], 'rps') / avg(runs.A, 'rps')).toFixed(2)}x, gateway CPU per call ${Math.round(avg(runs[x], 'cpuUs') - avg(runs.A, 'cpuUs'))} µs`;
const ms = (x) => x.toFixed(3);
console.log(
  `Sequential (${ROUNDS} interleaved rounds x ${PER_ROUND} calls, median of round medians): direct ${ms(latencyB.direct)} ms, floor ${ms(latencyF.gateway)} ms, gateway ${ms(latencyB.gateway)} ms; added by the gateway ${ms(latencyB.overhead)} ms (IQR ${latencyB.iqr.map(ms).join('..')}; target ≤ 1), by the floor ${ms(latencyF.overhead)} ms (IQR ${latencyF.iqr.map(ms).join('..')})`,
);
console.log(`B: ${summary('B')}`);
console.log(`F: ${summary('F')}`);
console.log(
  `B against the floor F: added p50 ${(avg(runs.B, 'p50') - avg(runs.F, 'p50')).toFixed(2)} ms, req/s ${(avg(runs.B, 'rps') / avg(runs.F, 'rps')).toFixed(2)}x, gateway CPU per call ${(
    (avg(runs.B, 'cpuUs') - avg(runs.A, 'cpuUs')) / Math.max(1, avg(runs.F, 'cpuUs') - avg(runs.A, 'cpuUs'))
  ).toFixed(2)}x the floor's`,
);
if (base) console.log(`C: ${summary('C')}`);
console.log(
  `L: our own tools/call ${Math.round(avg(runs.L, 'cpuUs'))} µs CPU per call; the gateway's forwarding beyond it (B − A − L): ${Math.round(avg(runs.B, 'cpuUs') - avg(runs.A, 'cpuUs') - avg(runs.L, 'cpuUs'))} µs`,
);
await ours.stop();
await floor.stop();
await base?.stop();
upstream.kill('SIGKILL');
