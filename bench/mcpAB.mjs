// MCP tools/call `greeting`, two builds of ours side by side in one run (before/after a change):
// `node bench/mcpAB.mjs <dirA> <dirB> [seconds, default 5] [rounds, default 2]`, each dir a built
// checkout. Modes: a 2026-07-28 stateless request, a 2025-11-25 session with SSE answers, one
// with JSON answers (`mcp.responseMode: 'json'`). Every round loads A B B A per mode; the server's
// own CPU time per request (/proc) is the figure to read on a shared machine, req/s is beside it.
import path from 'node:path';
import { abRow, load, loadAverage, startServer } from './lib.mjs';

const [dirA, dirB, secs = '5', rnds = '2'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node bench/mcpAB.mjs <dirA> <dirB> [seconds] [rounds]');
const duration = Number(secs);
const rounds = Number(rnds);
const warmSeconds = Number(process.env.MCP_WARMUP ?? 5);
const config = (extra) => [JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, ...extra } })];
const start = (dir, extra) => startServer(path.resolve(dir, 'bench/servers/ai-backend.mjs'), config(extra));

const LEGACY = '2025-11-25';
const ACCEPT = { accept: 'application/json, text/event-stream' };
const CALL = { jsonrpc: '2.0', id: 1, method: 'tools/call' };
const ARGS = { name: 'Ada', language: 'de' };
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const modern = (url) => ({
  url: url + '/mcp',
  method: 'POST',
  headers: { ...ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greeting' },
  body: JSON.stringify({ ...CALL, params: { name: 'greeting', arguments: ARGS, _meta: ENVELOPE } }),
});
async function session(url) {
  const headers = { 'content-type': 'application/json', ...ACCEPT };
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  await init.text();
  if (!id) throw new Error(`no session from ${url}: ${init.status}`);
  await (
    await fetch(url + '/mcp', {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return {
    url: url + '/mcp',
    method: 'POST',
    headers: { ...ACCEPT, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({ ...CALL, params: { name: 'greeting', arguments: ARGS } }),
  };
}

const loadBefore = await loadAverage();
const servers = {};
for (const [name, dir] of [
  ['A', dirA],
  ['B', dirB],
])
  servers[name] = { sse: await start(dir, {}), json: await start(dir, { responseMode: 'json' }) };
const modes = [
  { name: '2026-07-28 stateless request', req: async (s) => ({ ...modern(s.sse.url), pid: s.sse.pid }) },
  { name: '2025-11-25 session, SSE answers', req: async (s) => ({ ...(await session(s.sse.url)), pid: s.sse.pid }) },
  { name: '2025-11-25 session, JSON answers', req: async (s) => ({ ...(await session(s.json.url)), pid: s.json.pid }) },
];
const lines = [];
for (const m of modes) {
  const reqs = { A: await m.req(servers.A), B: await m.req(servers.B) };
  for (const [name, { pid, ...req }] of Object.entries(reqs)) {
    const res = await fetch(req.url, { method: 'POST', headers: { 'content-type': 'application/json', ...req.headers }, body: req.body });
    const text = await res.text();
    if (res.status !== 200 || !text.includes('Hallo, Ada!'))
      throw new Error(`${name} ${m.name}: unexpected answer ${res.status} ${text.slice(0, 200)}`);
  }
  // The JIT settles after a few thousand calls; on a loaded machine abRow's 1 s warm-up is a few hundred.
  for (const { pid: _pid, ...req } of Object.values(reqs)) await load({ ...req, duration: warmSeconds, warmup: 0 });
  const order = Array.from({ length: rounds }, () => ['A', 'B', 'B', 'A']).flat();
  lines.push(await abRow(m.name, order, (name) => reqs[name], { duration }));
}
for (const s of Object.values(servers)) await Promise.all([s.sse.stop(), s.json.stop()]);
console.log(
  `\n## MCP A/B: ${dirA} (A) vs ${dirB} (B), ${rounds} x A B B A, ${duration}s each, 50 connections, node ${process.version}, load average ${loadBefore} → ${await loadAverage()}\n`,
);
console.log('| mode | A req/s | B req/s | A CPU µs/req | B CPU µs/req | B/A CPU per request | errors |');
console.log('|---|---|---|---|---|---|---|');
console.log(lines.join('\n'));
