// MCP tools/call `greeting`: ours against the v2 MCP SDK used directly, same tool, same machine,
// same run. Run after the build: `node bench/mcp.mjs [seconds per run, default 5]`.
//
// Modes: (a) a 2026-07-28 stateless request (the `_meta` envelope and the standard headers, no
// session); (b) a 2025-11-25 session with SSE answers; (c) a 2025-11-25 session with JSON answers.
// Each mode runs ours and the SDK in A B B A order (averaged), 50 connections. Ours also runs its
// old 2025 stateless mode (`mcp.sessionMode: 'stateless'`) next to the 2026 request.
//
// BASE=<another built checkout> (e.g. a worktree of main at d786227, before any issue-19 work)
// also starts that tree's 2025 stateless mode in the same run, and reports the 2026 request
// against it: issue 19's "2026 stateless >= 2x today's 2025 stateless mode".
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFile } from 'node:fs/promises';
import { load, startServer } from './lib.mjs';

/** CPU seconds (user + system) a process has used so far (USER_HZ = 100). */
async function cpuSeconds(pid) {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const seconds = Number(process.argv[2] ?? 5);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const ourConfig = (config) => [JSON.stringify({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, ...config } })];
const ours = (config) => startServer(here('./servers/ai-backend.mjs'), ourConfig(config));
const base = process.env.BASE ? path.resolve(process.env.BASE) : undefined;
const sdk = (mode) => startServer(here('./servers/sdk-mcp.mjs'), [mode]);

const ARGS = { name: 'Ada', language: 'de' };
const CALL = { jsonrpc: '2.0', id: 1, method: 'tools/call' };

/** A 2026-07-28 request: the envelope in `_meta`, and MCP-Protocol-Version / Mcp-Method / Mcp-Name mirroring the body. */
const modern = (url) => ({
  url: url + '/mcp',
  method: 'POST',
  headers: {
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': 'greeting',
  },
  body: JSON.stringify({
    ...CALL,
    params: {
      name: 'greeting',
      arguments: ARGS,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  }),
});

const LEGACY = '2025-11-25';
async function session(url) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
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
  const note = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await note.text();
  return id;
}
const legacy = async (url) => ({
  url: url + '/mcp',
  method: 'POST',
  headers: { accept: 'application/json, text/event-stream', 'mcp-session-id': await session(url), 'mcp-protocol-version': LEGACY },
  body: JSON.stringify({ ...CALL, params: { name: 'greeting', arguments: ARGS } }),
});
/** The old 2025 stateless mode: a self-contained POST, no session. */
const stateless = (url) => ({
  url: url + '/mcp',
  method: 'POST',
  headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
  body: JSON.stringify({ ...CALL, params: { name: 'greeting', arguments: ARGS } }),
});

/** One call before the load: the answer must be the greeting, or the numbers mean nothing. */
async function check(name, req) {
  const res = await fetch(req.url, { method: 'POST', headers: { 'content-type': 'application/json', ...req.headers }, body: req.body });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('Hallo, Ada!') || text.includes('"isError":true'))
    throw new Error(`${name}: unexpected answer ${res.status} ${text.slice(0, 300)}`);
}

const servers = {
  ours: await ours({}),
  oursJson: await ours({ responseMode: 'json' }),
  oursStateless: await ours({ sessionMode: 'stateless' }),
  sdkSse: await sdk('sse'),
  sdkJson: await sdk('json'),
  ...(base
    ? { baseStateless: await startServer(path.join(base, 'bench/servers/ai-backend.mjs'), ourConfig({ sessionMode: 'stateless' })) }
    : {}),
};
const at = (server, req) => ({ ...req, pid: server.pid });
const modes = [
  {
    name: '2026-07-28 stateless request',
    ours: at(servers.ours, modern(servers.ours.url)),
    sdk: at(servers.sdkSse, modern(servers.sdkSse.url)),
  },
  {
    name: '2025-11-25 session, SSE answers',
    ours: at(servers.ours, await legacy(servers.ours.url)),
    sdk: at(servers.sdkSse, await legacy(servers.sdkSse.url)),
  },
  {
    name: '2025-11-25 session, JSON answers',
    ours: at(servers.oursJson, await legacy(servers.oursJson.url)),
    sdk: at(servers.sdkJson, await legacy(servers.sdkJson.url)),
  },
];
const old = at(servers.oursStateless, stateless(servers.oursStateless.url));
for (const m of modes) {
  await check(`ours ${m.name}`, m.ours);
  await check(`sdk ${m.name}`, m.sdk);
}
await check('ours 2025 stateless', old);
const baseline = base && at(servers.baseStateless, stateless(servers.baseStateless.url));
if (baseline) await check('BASE 2025 stateless', baseline);

// The JIT settles after a few thousand calls: on a loaded machine the 1 s warm-up of each run is a
// few hundred, so every request is first loaded for MCP_WARMUP seconds (default 5) of its own.
const warmSeconds = Number(process.env.MCP_WARMUP ?? 5);
for (const req of [...modes.flatMap((m) => [m.ours, m.sdk]), old, ...(baseline ? [baseline] : [])]) {
  const { pid: _pid, ...r } = req;
  await load({ ...r, duration: warmSeconds, warmup: 0 });
}

/** A warm-up second, then the measured run with the server's CPU time per request (steadier than req/s on a shared machine). */
async function run({ pid, ...req }) {
  await load({ ...req, duration: 1, warmup: 0 });
  const cpu0 = await cpuSeconds(pid);
  const r = await load({ ...req, duration: seconds, warmup: 0 });
  return { ...r, cpuUs: (((await cpuSeconds(pid)) - cpu0) * 1e6) / Math.max(1, r.total) };
}
const avg = (a, b) => ({
  rps: Math.round((a.rps + b.rps) / 2),
  p50: (a.p50 + b.p50) / 2,
  p99: (a.p99 + b.p99) / 2,
  errors: a.errors + b.errors,
  cpuUs: Math.round((a.cpuUs + b.cpuUs) / 2),
});

const rows = [];
for (const m of modes) {
  const o1 = await run(m.ours);
  const s1 = await run(m.sdk);
  const s2 = await run(m.sdk);
  const o2 = await run(m.ours);
  rows.push({ name: m.name, ours: avg(o1, o2), sdk: avg(s1, s2) });
}
const n1 = await run(modes[0].ours);
const l1 = await run(old);
const l2 = await run(old);
const n2 = await run(modes[0].ours);
const modernOurs = avg(n1, n2);
const oldOurs = avg(l1, l2);
// Against the BASE tree's 2025 stateless mode, in its own A B B A block.
let baseOld, modernVsBase;
if (baseline) {
  const m1 = await run(modes[0].ours);
  const b1 = await run(baseline);
  const b2 = await run(baseline);
  const m2 = await run(modes[0].ours);
  modernVsBase = avg(m1, m2);
  baseOld = avg(b1, b2);
}

console.log(`\nMCP tools/call greeting, ${seconds} s per run, 50 connections, A B B A (Node ${process.version})\n`);
console.log(
  '| mode | ours req/s | SDK req/s | ours / SDK req/s | ours / SDK CPU µs/req | SDK CPU / ours CPU | ours p50 / p99 ms | SDK p50 / p99 ms | errors |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.ours.rps} | ${r.sdk.rps} | ${(r.ours.rps / r.sdk.rps).toFixed(2)} | ${r.ours.cpuUs} / ${r.sdk.cpuUs} | ${(r.sdk.cpuUs / r.ours.cpuUs).toFixed(2)} | ${r.ours.p50} / ${r.ours.p99} | ${r.sdk.p50} / ${r.sdk.p99} | ${r.ours.errors + r.sdk.errors} |`,
  );
}
console.log(`\n| ours | req/s | CPU µs/req | p50 / p99 ms | errors |\n|---|---|---|---|---|`);
console.log(
  `| 2026-07-28 stateless request | ${modernOurs.rps} | ${modernOurs.cpuUs} | ${modernOurs.p50} / ${modernOurs.p99} | ${modernOurs.errors} |`,
);
console.log(
  `| 2025 stateless mode (mcp.sessionMode 'stateless') | ${oldOurs.rps} | ${oldOurs.cpuUs} | ${oldOurs.p50} / ${oldOurs.p99} | ${oldOurs.errors} |`,
);
console.log(
  `\n2026 stateless / 2025 stateless mode: ${(modernOurs.rps / oldOurs.rps).toFixed(2)}x req/s, ${(oldOurs.cpuUs / modernOurs.cpuUs).toFixed(2)}x less CPU per request`,
);
if (baseOld) {
  console.log(
    `\n| 2026-07-28 stateless request (ours) vs BASE's 2025 stateless mode (${base}) | req/s | CPU µs/req | p50 / p99 ms | errors |\n|---|---|---|---|---|`,
  );
  console.log(
    `| ours, 2026-07-28 stateless request | ${modernVsBase.rps} | ${modernVsBase.cpuUs} | ${modernVsBase.p50} / ${modernVsBase.p99} | ${modernVsBase.errors} |`,
  );
  console.log(`| BASE, 2025 stateless mode | ${baseOld.rps} | ${baseOld.cpuUs} | ${baseOld.p50} / ${baseOld.p99} | ${baseOld.errors} |`);
  console.log(
    `\n2026 stateless (ours) / BASE 2025 stateless mode: ${(modernVsBase.rps / baseOld.rps).toFixed(2)}x req/s, ${(baseOld.cpuUs / modernVsBase.cpuUs).toFixed(2)}x less CPU per request`,
  );
}
console.log(
  `load average at the end: ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);

for (const s of Object.values(servers)) await s.stop();
