// Observability overhead (issue 14): the transport scenarios on a server with metrics, stored
// statistics and the (no-op) tracing calls, as the default config runs, against the same build
// with `metrics.enabled: false` and `statistics.enabled: false`; both servers up at once, runs
// alternating A B B A so drift cancels. A third server also registers an OpenTelemetry SDK that
// records every span (informational: what turning tracing on costs). Target: default at most 5%
// below the baseline.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { load, startServer } from './lib.mjs';

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
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  await (
    await fetch(url + '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...MCP_HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return sessionId;
}

async function cpuSeconds(pid) {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function observabilityOverhead(duration) {
  const here = (p) => fileURLToPath(new URL(p, import.meta.url));
  const base = { storage: { type: 'memory' }, mcp: { auth: { authType: 'none' } } };
  const servers = {
    off: await startServer(here('./servers/ai-backend.mjs'), [
      JSON.stringify({ ...base, metrics: { enabled: false }, statistics: { enabled: false } }),
    ]),
    on: await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(base)]),
    sdk: await startServer(here('./servers/ai-backend-otel.mjs'), [JSON.stringify(base)]),
  };
  const sessions = {};
  for (const [k, s] of Object.entries(servers)) sessions[k] = await mcpSession(s.url);
  const scenarios = [
    {
      name: 'POST /rpc system.test',
      req: (k) => ({
        url: servers[k].url + '/rpc',
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: { message: 'test' } }),
      }),
    },
    {
      name: 'GET /trpc/mcp.echo',
      req: (k) => ({ url: servers[k].url + '/trpc/mcp.echo?input=' + encodeURIComponent(JSON.stringify({ json: { message: 'hi' } })) }),
    },
    {
      name: 'MCP tools/call greeting',
      req: (k) => ({
        url: servers[k].url + '/mcp',
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-session-id': sessions[k] },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'bench' } } }),
      }),
    },
  ];
  const half = Math.max(1, duration / 2);
  const run = async (s, k) => {
    const opts = s.req(k);
    await load({ ...opts, duration: 1, warmup: 0 });
    const cpu0 = await cpuSeconds(servers[k].pid);
    const r = await load({ ...opts, duration: half, warmup: 0 });
    return { ...r, cpuUs: (((await cpuSeconds(servers[k].pid)) - cpu0) * 1e6) / Math.max(1, r.total) };
  };
  const avg = (a, b, key) => (a[key] + b[key]) / 2;
  const lines = [
    `\n## Observability overhead: metrics + stored statistics + no-op tracing (default) vs both off, and with an OpenTelemetry SDK recording every span (A B B A, ${half}s per run)\n`,
    '| scenario | off req/s | default req/s | default / off | SDK req/s | SDK / off | CPU µs/req off | default | SDK | errors |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const s of scenarios) {
      const a1 = await run(s, 'off');
      const b1 = await run(s, 'on');
      const c1 = await run(s, 'sdk');
      const c2 = await run(s, 'sdk');
      const b2 = await run(s, 'on');
      const a2 = await run(s, 'off');
      const off = avg(a1, a2, 'rps');
      const on = avg(b1, b2, 'rps');
      const sdk = avg(c1, c2, 'rps');
      const errors = [a1, a2, b1, b2, c1, c2].reduce((n, r) => n + r.errors, 0);
      lines.push(
        `| ${s.name} | ${Math.round(off)} | ${Math.round(on)} | ${(on / off).toFixed(3)} | ${Math.round(sdk)} | ${(sdk / off).toFixed(3)} | ${Math.round(avg(a1, a2, 'cpuUs'))} | ${Math.round(avg(b1, b2, 'cpuUs'))} | ${Math.round(avg(c1, c2, 'cpuUs'))} | ${errors} |`,
      );
    }
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
  return lines.join('\n');
}

// Run on its own: node bench/observabilityOverhead.mjs [seconds]
if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await observabilityOverhead(Number(process.argv[2] ?? 8)));
