// Instructions per MCP tools/call `greeting`, counted by valgrind's callgrind in the server process
// (all its threads, GC included): repeatable on a loaded machine, where CPU time is not.
// `node bench/mcpInstructions.mjs <built checkout> <ours|sdk> <sse|json|modern> [warm-up calls, default 1500] [counted calls, default 500]`
// Counting starts after the warm-up (the JIT has settled); 4 clients send calls one after another.
// Slow: about 3 minutes per scenario. Needs valgrind.
import path from 'node:path';
import { tmpdir } from 'node:os';
import { startUnderCallgrind } from './lib.mjs';

const [tree, who, mode, warmS = '1500', nS = '500'] = process.argv.slice(2);
const warm = Number(warmS),
  n = Number(nS);
const dir = `${tmpdir()}/mcp-callgrind-${who}-${mode}-${path.basename(tree)}`;
const script = who === 'ours' ? path.join(tree, 'bench/servers/ai-backend.mjs') : path.join(tree, 'bench/servers/sdk-mcp.mjs');
const args =
  who === 'ours'
    ? [
        JSON.stringify({
          storage: { type: 'memory' },
          mcp: { auth: { authType: 'none' }, ...(mode === 'json' ? { responseMode: 'json' } : {}) },
        }),
      ]
    : [mode === 'json' ? 'json' : 'sse'];
const server = await startUnderCallgrind(script, args, dir);
const { url } = server;
const LEGACY = '2025-11-25';
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let req;
if (mode === 'modern') {
  req = {
    headers: { ...headers, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greeting' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'greeting',
        arguments: { name: 'Ada', language: 'de' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'b', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  };
} else {
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'b', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  await init.text();
  await (
    await fetch(url + '/mcp', {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  req = {
    headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'greeting', arguments: { name: 'Ada', language: 'de' } },
    }),
  };
}
// 4 concurrent clients, sequential requests each
async function burst(count) {
  let left = count;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (left-- > 0) {
        // Under valgrind a reply can outlast the keep-alive window, and a reused socket is reset:
        // that is the load, not the server, so the call is sent again on a new connection.
        const r = await fetch(url + '/mcp', { method: 'POST', ...req }).catch((err) => {
          if (err?.cause?.code !== 'ECONNRESET') throw err;
          return fetch(url + '/mcp', { method: 'POST', ...req });
        });
        const t = await r.text();
        if (!t.includes('Hallo, Ada!')) throw new Error(t.slice(0, 300));
      }
    }),
  );
}
await burst(warm);
const ir = await server.counted(() => burst(n));
console.log(JSON.stringify({ tree: path.basename(tree), who, mode, n, irPerReq: Math.round(ir / n) }));
