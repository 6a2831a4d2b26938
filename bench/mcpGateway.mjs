// The MCP gateway's cost per call: tools/call `echo` of @modelcontextprotocol/server-everything
// (Streamable HTTP mode) called directly, against the same tool called through our /mcp as
// `web__echo` (our gateway forwarding over its one shared upstream session), same machine, same
// run. Both sides are 2025-11-25 sessions (initialize once, then POSTs with Mcp-Session-Id), in
// A B B A order, averaged. Run after the build: `node bench/mcpGateway.mjs [seconds per run, default 5] [connections, default 10]`.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { load, loadAverage, startServer } from './lib.mjs';

const seconds = Number(process.argv[2] ?? 5);
const connections = Number(process.argv[3] ?? 10);
const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const upstream = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
  env: { ...process.env, PORT: String(port) },
  stdio: ['ignore', 'ignore', 'pipe'],
});
await new Promise((resolve) => upstream.stderr.on('data', (d) => String(d).includes('listening on port') && resolve()));
const upstreamUrl = `http://127.0.0.1:${port}/mcp`;

const ours = await startServer(here('./servers/ai-backend.mjs'), [
  JSON.stringify({
    storage: { type: 'memory' },
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { web: { type: 'http', url: upstreamUrl } },
  }),
]);

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

/** Wait until our gateway lists the upstream's tools (its shared connection is open). */
const ourUrl = `${ours.url}/mcp`;
const ourSession = await session(ourUrl);
for (let i = 0; ; i++) {
  const r = await fetch(ourUrl, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': ourSession, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  if ((await r.text()).includes('web__echo')) break;
  if (i > 100) throw new Error('the gateway never listed web__echo');
  await new Promise((r) => setTimeout(r, 100));
}
const upstreamSession = await session(upstreamUrl);

// Each request its own JSON-RPC id (written by setupRequest before it is sent): in a 2025
// session ids must not repeat, and concurrent calls that share one lose their answers (the
// session routes a response by its id), which made an earlier version of this bench measure
// its own 10 s client timeouts at 10 connections, not the gateway.
const call = (url, sessionId, name) => ({
  url,
  method: 'POST',
  headers: { ...HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
  setupRequest: (r) => {
    r.body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params: { name, arguments: { message: 'hello' } } });
    return r;
  },
});
let nextId = 1;
const req = { A: call(upstreamUrl, upstreamSession, 'echo'), B: call(ourUrl, ourSession, 'web__echo') };
const runs = { A: [], B: [] };
for (const name of ['A', 'B', 'B', 'A']) runs[name].push(await load({ ...req[name], connections, duration: seconds, warmup: 1 }));
const avg = (xs, k) => xs.reduce((s, x) => s + x[k], 0) / xs.length;
const row = (label, xs) =>
  `| ${label} | ${Math.round(avg(xs, 'rps'))} | ${avg(xs, 'p50').toFixed(2)} | ${avg(xs, 'p99').toFixed(2)} | ${xs.reduce((s, x) => s + x.errors, 0)} |`;
console.log(`load average ${await loadAverage()}, ${connections} connections, ${seconds} s per run, A B B A`);
console.log('| path | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|');
console.log(row('direct: server-everything echo', runs.A));
console.log(row('through the gateway: /mcp web__echo', runs.B));
console.log(
  `added p50 ${(avg(runs.B, 'p50') - avg(runs.A, 'p50')).toFixed(2)} ms, added p99 ${(avg(runs.B, 'p99') - avg(runs.A, 'p99')).toFixed(2)} ms, req/s ratio ${(avg(runs.B, 'rps') / avg(runs.A, 'rps')).toFixed(2)}x`,
);
await ours.stop();
upstream.kill('SIGKILL');
