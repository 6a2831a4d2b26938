// Transport benchmark: every scenario in ONE run, reported as a ratio to a bare Hono route
// measured in the same run (shared machines drift; ratios do not). Usage: node bench/run.mjs [seconds]
import { fileURLToPath } from 'node:url';
import { load, rssMb, startServer, table } from './lib.mjs';

const duration = Number(process.argv[2] ?? 8);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const config = { storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } };

const bare = await startServer(here('./servers/bare-hono.mjs'));
const app = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
const idleRss = await rssMb(app.pid);

/** Open an initialized MCP session on a server; returns its id. */
async function mcpSession(url) {
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  await init.text();
  await fetch(url + '/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  return id;
}
const mcpCall = (url, sessionId) => ({
  url: url + '/mcp',
  method: 'POST',
  headers: { accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'bench' } } }),
});
const sessionId = await mcpSession(app.url);

const rows = [];
const run = async (name, opts) => rows.push({ name, ...(await load({ duration, ...opts })) });

await run('bare Hono POST /json (ceiling)', { url: bare.url + '/json', method: 'POST', body: JSON.stringify({ message: 'test' }) });
await run('POST /rpc system.test', {
  url: app.url + '/rpc',
  method: 'POST',
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: { message: 'test' } }),
});
await run('GET /trpc/mcp.echo', {
  url: app.url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } })),
});
await run('MCP tools/call greeting', mcpCall(app.url, sessionId));
const loadedRss = await rssMb(app.pid);
await app.stop();

// The same tool call on a server answering MCP POSTs as single JSON bodies (mcp.responseMode).
const jsonMode = await startServer(here('./servers/ai-backend.mjs'), [
  JSON.stringify({ ...config, mcp: { ...config.mcp, responseMode: 'json' } }),
]);
await run('MCP tools/call greeting (responseMode json)', mcpCall(jsonMode.url, await mcpSession(jsonMode.url)));
await jsonMode.stop();

// Cold start: process spawn to first /health answer, through the CLI users run.
const cold = [];
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  const s = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  while ((await fetch(s.url + '/health').catch(() => null))?.status !== 200);
  cold.push(performance.now() - t0);
  await s.stop();
}
await bare.stop();
cold.sort((a, b) => a - b);

console.log(`\n## Transports (${duration}s per scenario, 50 connections, node ${process.version})\n`);
console.log(table(rows, rows[0]));
console.log(`\ncold start to first /health (median of 5): ${Math.round(cold[2])} ms`);
console.log(`RSS idle after start: ${idleRss} MB; after load: ${loadedRss} MB`);

// ---------------------------------------------------------------------------------------------
// Auth overhead (issue 4; owned by the auth/security helper, see bench/authOverhead.mjs): the
// transport scenarios with a valid HS256 JWT on every request, as a ratio to the same scenario
// without auth, measured in this run. Target: JWT at most 10% slower.
const { authOverhead } = await import('./authOverhead.mjs');
console.log(await authOverhead(duration));

// Observability overhead (issue 14, bench/observabilityOverhead.mjs): metrics, stored statistics
// and tracing on vs off, measured in this run.
const { observabilityOverhead } = await import('./observabilityOverhead.mjs');
console.log(await observabilityOverhead(duration));

// API key overhead (issue 22, bench/apiKeyOverhead.mjs): an aib_ key vs a valid JWT, measured in this run.
const { apiKeyOverhead } = await import('./apiKeyOverhead.mjs');
console.log(await apiKeyOverhead(duration));

// Rate-limit overhead (issue 21, bench/rateLimitOverhead.mjs): mcp.rateLimiting on (the default,
// limits not reached) vs off, measured in this run.
const { rateLimitOverhead } = await import('./rateLimitOverhead.mjs');
console.log(await rateLimitOverhead(duration));
