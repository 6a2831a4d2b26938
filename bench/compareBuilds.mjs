// A/B of two builds on the same machine in the same run: `node bench/compareBuilds.mjs <dirA> <dirB> [seconds]`
// where each dir is a checkout with built packages (e.g. `git archive <commit> | tar -x -C /tmp/A`,
// then `pnpm install && pnpm build` there). Both servers run side by side; each scenario is loaded
// A B A B, and the server's own CPU time per request (user + system, from /proc) is reported next
// to req/s: on a shared machine req/s follows the neighbours' load, CPU per request much less.
import path from 'node:path';
import { abRow, startServer } from './lib.mjs';

const [dirA, dirB, secs = '6'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node bench/compareBuilds.mjs <dirA> <dirB> [seconds]');
const duration = Number(secs);
const config = { storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } };
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

async function mcpSession(url) {
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...MCP_HEADERS },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  await init.text();
  await (
    await fetch(url + '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...MCP_HEADERS, 'mcp-session-id': id },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return id;
}

const servers = {};
for (const [name, dir] of [
  ['A', dirA],
  ['B', dirB],
]) {
  const s = await startServer(path.resolve(dir, 'bench/servers/ai-backend.mjs'), [JSON.stringify(config)]);
  servers[name] = { ...s, session: await mcpSession(s.url) };
}

const scenarios = [
  {
    name: 'POST /rpc system.test',
    req: (s) => ({
      url: s.url + '/rpc',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: { message: 'test' } }),
    }),
  },
  {
    name: 'GET /trpc/mcp.echo',
    req: (s) => ({ url: s.url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } })) }),
  },
  {
    name: 'MCP tools/call greeting',
    req: (s) => ({
      url: s.url + '/mcp',
      method: 'POST',
      headers: { 'content-type': 'application/json', ...MCP_HEADERS, 'mcp-session-id': s.session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'bench' } } }),
    }),
  },
];

const lines = [
  `## A/B: ${dirA} (A) vs ${dirB} (B), A B A B, ${duration}s each, 20 connections, node ${process.version}`,
  '',
  '| scenario | A req/s | B req/s | A CPU µs/req | B CPU µs/req | B/A CPU per request | errors |',
  '|---|---|---|---|---|---|---|',
];
for (const sc of scenarios) {
  lines.push(
    await abRow(sc.name, ['A', 'B', 'A', 'B'], (name) => ({ ...sc.req(servers[name]), pid: servers[name].pid }), {
      duration,
      connections: 20,
    }),
  );
}
await Promise.all(Object.values(servers).map((s) => s.stop()));
console.log(lines.join('\n'));
