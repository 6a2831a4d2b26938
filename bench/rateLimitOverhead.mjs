// Rate-limit overhead (issue 21: rate limiting is on by default): each transport scenario on a
// server with `mcp.rateLimiting` on, as a ratio to the same scenario on a server with it off, in
// the same run. The "on" server has limits no load reaches, so every request takes the counting
// path (a fixed-window increment in the store per /mcp request and per tool call) and none is
// refused. Runs alternate A B B A (A = off), each half the duration; the server's own CPU per
// request is reported beside req/s (on a shared machine it follows the neighbours' load less).
// Usage: node bench/rateLimitOverhead.mjs [seconds]
import { fileURLToPath } from 'node:url';
import { authScenarios, cpuSeconds, mcpSession } from './authOverhead.mjs';
import { load, startServer } from './lib.mjs';

const mean = (a, b, key) => (a[key] + b[key]) / 2;

export async function rateLimitOverhead(duration) {
  const here = (p) => fileURLToPath(new URL(p, import.meta.url));
  const config = (rateLimiting) => ({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, rateLimiting } });
  const servers = {
    off: await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config({ enabled: false }))]),
    on: await startServer(here('./servers/ai-backend.mjs'), [
      JSON.stringify(config({ enabled: true, maxRequests: 1e9, maxToolCalls: 1e9 })),
    ]),
  };
  const half = Math.max(1, duration / 2);
  const run = async (s, variant) => {
    const app = servers[variant];
    const opts = s.req(app.url, variant);
    await load({ ...opts, duration: 1, warmup: 0 });
    const cpu0 = await cpuSeconds(app.pid);
    const result = await load({ ...opts, duration: half, warmup: 0 });
    return { ...result, cpuUs: (((await cpuSeconds(app.pid)) - cpu0) * 1e6) / Math.max(1, result.total) };
  };
  const sessions = { off: await mcpSession(servers.off.url, {}), on: await mcpSession(servers.on.url, {}) };
  // authScenarios builds requests for one URL; here each variant has its own server.
  const scenarios = authScenarios('', {}).map((s, i) => ({
    name: s.name,
    req: (url, variant) => {
      const r = authScenarios(url, { [variant]: sessions[variant] })[i].req(variant);
      return r;
    },
  }));
  const lines = [
    `\n## Rate-limit overhead: mcp.rateLimiting on (limits not reached) vs off (two servers, A B B A, ${half}s per run)\n`,
    '| scenario | off req/s | on req/s | on / off | server CPU µs/req off | on | CPU on / off | errors |',
    '|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const s of scenarios) {
      const a1 = await run(s, 'off');
      const b1 = await run(s, 'on');
      const b2 = await run(s, 'on');
      const a2 = await run(s, 'off');
      const off = { rps: mean(a1, a2, 'rps'), cpu: mean(a1, a2, 'cpuUs') };
      const on = { rps: mean(b1, b2, 'rps'), cpu: mean(b1, b2, 'cpuUs') };
      lines.push(
        `| ${s.name} | ${Math.round(off.rps)} | ${Math.round(on.rps)} | ${(on.rps / off.rps).toFixed(2)} | ${Math.round(off.cpu)} | ${Math.round(on.cpu)} | ${(on.cpu / off.cpu).toFixed(2)} | ${a1.errors + a2.errors + b1.errors + b2.errors} |`,
      );
    }
  } finally {
    await servers.off.stop();
    await servers.on.stop();
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await rateLimitOverhead(Number(process.argv[2] ?? 8)));
