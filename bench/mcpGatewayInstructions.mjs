// Instructions per forwarded MCP tools/call, counted by valgrind's callgrind in the gateway process
// (all its threads, GC included): repeatable on a loaded machine, where CPU time is not. The upstream
// is @modelcontextprotocol/server-everything (Streamable HTTP, run normally, not counted); the gateway
// is `<built checkout>`'s bench server with it configured as `web`. Each call is a 2025-11-25 session
// POST with its own JSON-RPC id; 4 clients send calls one after another. `tool` is `web__echo` (the
// forwarded call) or `greeting` (our own tool on the same server, for reference), or `echo`: the
// upstream itself called directly, counted in its own process (the SDK's server alone: the baseline).
// `node bench/mcpGatewayInstructions.mjs <built checkout> [web__echo|greeting|echo] [warm-up calls] [counted calls]`
// (defaults 3,000 and 1,000: after 1,500 calls TurboFan still compiles, a third of the instructions
// counted over the next 500 were the optimizing compiler's).
// Counting starts after the warm-up (the JIT has settled). Needs valgrind; slow (minutes per run).
import path from 'node:path';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { callgrindCommand, countInstructions, startEverythingHttp } from './lib.mjs';

const [tree, tool = 'web__echo', warmS = '3000', nS = '1000'] = process.argv.slice(2);
const warm = Number(warmS);
const n = Number(nS);
const dir = `${tmpdir()}/mcp-gateway-callgrind-${tool}-${path.basename(tree)}-${process.pid}`;

const direct = tool === 'echo';
const valgrind = callgrindCommand(dir);
// Direct: the upstream runs under callgrind and is called itself (no gateway).
const { child: upstream, url: upstreamUrl } = await startEverythingHttp(direct ? { command: 'valgrind', prefix: valgrind } : undefined);

const config = JSON.stringify({
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'none' } },
  gateway: { allowPrivateNetwork: true },
  mcpServers: { web: { type: 'http', url: upstreamUrl } },
});
const child = direct
  ? upstream
  : spawn('valgrind', [...valgrind, path.join(tree, 'bench/servers/ai-backend.mjs'), config], { stdio: ['ignore', 'pipe', 'pipe'] });
// Neither child outlives this script, whatever ends it.
process.on('exit', () => {
  child.kill('SIGKILL');
  upstream.kill('SIGKILL');
});
let err = '';
child.stderr.on('data', (d) => (err += d));
const url = direct
  ? upstreamUrl
  : await new Promise((res, rej) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const l = out.split('\n').find((x) => x.startsWith('{'));
        if (l) res(`${JSON.parse(l).url}/mcp`);
      });
      child.on('exit', (c) => rej(new Error(`exit ${c}${err.slice(-2000)}`)));
    });
const LEGACY = '2025-11-25';
const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
// Under valgrind the first requests (modules still loading) can outlast a socket: retried.
async function retried(f) {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (i >= 5) throw e;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}
const init = await retried(() =>
  fetch(url, {
    method: 'POST',
    headers: base,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'b', version: '1' } },
    }),
  }),
);
const headers = { ...base, 'mcp-session-id': init.headers.get('mcp-session-id'), 'mcp-protocol-version': LEGACY };
await init.text();
await (await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
let nextId = 1;
const post = (body) => fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, ...body }) });
// The gateway connects to its upstream at start: wait until it lists the tool.
for (let i = 0; !(await retried(async () => (await post({ method: 'tools/list' })).text())).includes(tool); i++) {
  if (i > 600) throw new Error(`the gateway never listed ${tool}`);
  await new Promise((r) => setTimeout(r, 100));
}
const args = tool === 'greeting' ? { name: 'Ada', language: 'de' } : { message: 'hello' };
const expect = tool === 'greeting' ? 'Hallo, Ada!' : 'Echo: hello';
// Direct, the session lists `echo` at once (the loop above returned on its first tools/list).
// Calls the gateway answered with an error (under valgrind, a kept-alive upstream socket can be
// closed by the upstream just as the slow gateway reuses it): sent again, and counted (their
// instructions are in the count, so a run with many is a little high).
let failed = 0;
async function burst(count) {
  let left = count;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (left-- > 0) {
        const body = { method: 'tools/call', params: { name: tool, arguments: args } };
        for (let attempt = 0; ; attempt++) {
          // Under valgrind a reply can outlast the keep-alive window, and a reused socket is reset:
          // that is the load, not the server, so the call is sent again on a new connection.
          const r = await post(body).catch((e) => {
            if (e?.cause?.code !== 'ECONNRESET') throw e;
            return post(body);
          });
          const t = await r.text();
          if (t.includes(expect)) break;
          if (attempt >= 3) throw new Error(t.slice(0, 300));
          failed++;
          // A lost upstream connection is opened again after a backoff (250 ms, then 500, 1000).
          await new Promise((r) => setTimeout(r, 1500));
        }
      }
    }),
  );
}
await burst(warm);
const ir = await countInstructions(child, dir, () => burst(n));
upstream.kill('SIGKILL');
console.log(JSON.stringify({ tree: path.basename(tree), tool, n, irPerCall: Math.round(ir / n), failedAndRetried: failed }));
