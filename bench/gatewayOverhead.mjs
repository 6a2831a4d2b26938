// What a gateway adds to one chat completion, measured the way the independent gateway benchmark
// does (cuihuan/llm-gateway-bench, probe/overhead.mjs): a canned OpenAI upstream
// (bench/servers/canned-openai.mjs); sequential requests from one client; rounds that interleave
// calls made directly to the upstream with calls through the gateway (direct n, gateway n, …); the
// overhead of a round is the gateway's median minus the direct median; the figure is the median of
// the round overheads, with their interquartile range. All gateways in one run, one at a time,
// each in a fresh process:
//   - the floors (bench/servers/floor-pass-through.mjs): a Hono route that checks one token,
//     forwards the JSON and reads the usage, with the global fetch and with undici's `request` on
//     a keep-alive Pool;
//   - Portkey's gateway from npm (@portkey-ai/gateway, `build/start-server.js`), routed to the
//     canned upstream by its x-portkey-custom-host header;
//   - ours, POST /v1/chat/completions: BYOK (x-provider-api-key, memory store) and metered (a
//     JWT user with credits) on the memory, SQLite, PostgreSQL and Redis stores; with
//     `ai.passThrough` off and on where the build has that switch.
// Cold: the rounds right after 15 warm-up calls to a freshly started gateway (the independent
// method's warm-up). Warm: the same rounds again after 1,500 more calls. Streamed (after warm):
// time to the first byte of the body, against the same streamed call made directly. The gateway
// process's CPU per call is read from /proc for each phase (steadier than wall time on a loaded
// machine).
//
// Usage (after `npx -y pnpm@10.34.9 build`):
//   node bench/gatewayOverhead.mjs [rounds=7] [per round=25] [warm-up calls=1500]
// Saturated (after streamed): 50 connections for GW_SATURATED seconds (default 6; 0 skips), the
// issue's "our peer harness" (autocannon, bench/lib.mjs): req/s and the gateway's CPU per call.
// Environment:
//   GW_ONLY=floor-fetch,ours-byok,…   only these rows (ids as printed); the floors always run
//   GW_STORES=memory,sqlite,postgres,redis   stores of the metered rows
//   GW_BYOK_STORES=sqlite,…   BYOK rows on these stores too (ids ours-byok-<store>…; the BYOK row of record is memory's)
//   GW_PASSTHROUGH=off,on   ours with ai.passThrough off and/or on (default: both when the build
//                           has the switch; "default" = the build's own default, no key set)
//   GW_NO_PORTKEY=1         skip Portkey (it is installed with npm on first use)
//   GW_STREAM_WARMUP=100    streamed calls each way before the streamed rounds (after the 1,500 non-streamed)
//   GW_SATURATED_ROUNDS=1   >1: the saturated runs are taken after the rest, with every selected row's server
//                           running at once (a fresh start, warmed), in that many rounds that interleave the rows
//                           (order reversed every other round), each GW_SATURATED seconds: the host's speed drifts
//                           within a run here, and a row measured alone takes the drift of its minutes. Select at
//                           most one row per durable store: two servers would open it at once.
//   GW_REPEAT=1             >1: the sequential part that many times, each row in a fresh process every time, the rows'
//                           order reversed every other time; a row's figures pool the rounds of all its processes
//                           (a process's JIT and the host's minute move one run's rows by ±0.2 ms here)
//   BENCH_TOOLS_DIR         where Portkey and undici are installed (default: <tmp>/ai-backend-bench-tools)
//   PGUSER / REDIS_URL-less defaults: PostgreSQL postgres@127.0.0.1:5432/test, Redis 127.0.0.1:6379
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { load, loadAverage, startServer, verdict } from './lib.mjs';

const ROUNDS = Number(process.argv[2] ?? 7);
const PER_ROUND = Number(process.argv[3] ?? 25);
const WARM_CALLS = Number(process.argv[4] ?? 1500);
const COLD_WARMUP = 15;
const STREAM_WARMUP = Number(process.env.GW_STREAM_WARMUP ?? 100);
const SAT_SECONDS = Number(process.env.GW_SATURATED ?? 6);
const SAT_CONNECTIONS = 50;
const SAT_ROUNDS = Number(process.env.GW_SATURATED_ROUNDS ?? 1);
const REPEAT = Number(process.env.GW_REPEAT ?? 1);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-gateway-overhead-jwt-secret-0123456789';
const FLOOR_TOKEN = 'floor-token-0123456789';
const MODEL = 'gpt-4.1-mini';
const PORTKEY_VERSION = '1.15.2';
const UNDICI_VERSION = '7.30.2';
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

/**
 * CPU seconds a process has run, all its threads, in nanoseconds (/proc/<pid>/task/<tid>/schedstat):
 * /proc/<pid>/stat counts 10 ms ticks, too coarse for 175 calls of a few hundred µs each.
 */
async function cpuSeconds(pid) {
  let ns = 0;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => []))
    ns += Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '0')).split(' ')[0]);
  return ns / 1e9;
}

// ---------- the client: one call at a time ----------
async function call(t, stream = false) {
  const t0 = performance.now();
  const res = await fetch(t.url, {
    method: 'POST',
    headers: t.headers,
    body: stream ? t.streamBody : t.body,
    signal: AbortSignal.timeout(15_000),
  });
  if (!stream) {
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${t.id}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return { ms, text, headers: res.headers };
  }
  const reader = res.body.getReader();
  let chunk = await reader.read();
  const ms = performance.now() - t0; // time to the first byte of the body
  let text = '';
  const decoder = new TextDecoder();
  while (!chunk.done) {
    text += decoder.decode(chunk.value, { stream: true });
    chunk = await reader.read();
  }
  if (res.status !== 200) throw new Error(`${t.id}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return { ms, text, headers: res.headers };
}
async function burst(t, n, stream) {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await call(t, stream)).ms);
  return out;
}
/** Interleaved rounds (direct n, gateway n); also the gateway process's CPU per gateway call. */
async function rounds(direct, gw, pid, stream = false) {
  const d = [];
  const g = [];
  let cpu = 0;
  for (let r = 0; r < ROUNDS; r++) {
    d.push(await burst(direct, PER_ROUND, stream));
    const c0 = pid ? await cpuSeconds(pid) : 0;
    g.push(await burst(gw, PER_ROUND, stream));
    if (pid) cpu += (await cpuSeconds(pid)) - c0;
  }
  return { ...verdict(d, g), cpuUs: pid ? (cpu * 1e6) / (ROUNDS * PER_ROUND) : undefined, raw: { d, g } };
}
/** Several fresh processes' rounds of one row as one figure: every round of each, pooled (GW_REPEAT). */
function pooled(runs) {
  const d = runs.flatMap((r) => r.raw.d);
  const g = runs.flatMap((r) => r.raw.g);
  const cpu = runs.every((r) => r.cpuUs !== undefined) ? runs.reduce((s, r) => s + r.cpuUs, 0) / runs.length : undefined;
  return { ...verdict(d, g), cpuUs: cpu, raw: { d, g } };
}

/**
 * Saturated: SAT_CONNECTIONS connections for SAT_SECONDS after a 2 s warm-up at the same load;
 * req/s, p50/p99 and the process's CPU per answered call (pid omitted: the upstream called directly).
 */
const saturation = (t) => ({ url: t.url, method: 'POST', body: t.body, headers: t.headers, connections: SAT_CONNECTIONS, warmup: 0 });
async function saturate(t, pid, warmupSeconds = 2) {
  const opts = saturation(t);
  if (warmupSeconds > 0) await load({ ...opts, duration: warmupSeconds });
  const c0 = pid ? await cpuSeconds(pid) : 0;
  const r = await load({ ...opts, duration: SAT_SECONDS });
  const cpuUs = pid ? (((await cpuSeconds(pid)) - c0) * 1e6) / Math.max(1, r.total) : undefined;
  return { ...r, cpuUs };
}

// ---------- tools installed at run time, never committed ----------
const toolsDir = process.env.BENCH_TOOLS_DIR ?? join(tmpdir(), 'ai-backend-bench-tools');
const portkeyScript = join(toolsDir, 'node_modules/@portkey-ai/gateway/build/start-server.js');
const undiciEntry = join(toolsDir, 'node_modules/undici/index.js');
function installTools() {
  // npm prunes what a `--no-save` install does not name, so every tool this run needs is named
  // whenever one is missing (installing Portkey alone used to remove undici).
  const wanted = [`undici@${UNDICI_VERSION}`];
  if (!process.env.GW_NO_PORTKEY) wanted.push(`@portkey-ai/gateway@${PORTKEY_VERSION}`);
  if (existsSync(undiciEntry) && (process.env.GW_NO_PORTKEY || existsSync(portkeyScript))) return;
  console.error(`[gatewayOverhead] npm install ${wanted.join(' ')} into ${toolsDir} …`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', toolsDir, ...wanted], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
/** Portkey prints a banner, not a JSON line: start it and poll until it answers. */
async function startPortkey() {
  const port = await freePort();
  const child = spawn(process.execPath, [portkeyScript, `--port=${port}`, '--headless'], {
    cwd: toolsDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`Portkey exited ${child.exitCode}`);
    const ok = await fetch(url + '/', { signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    pid: child.pid,
    child,
    stop: () =>
      new Promise((r) => {
        child.once('exit', r);
        child.kill('SIGTERM');
      }),
  };
}

// ---------- the run ----------
installTools();
const loadBefore = await loadAverage();
const upstream = await startServer(here('./servers/canned-openai.mjs'));
children.push(upstream.child);
const body = (model, stream) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'ping' }],
    max_tokens: 1,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
const direct = {
  id: 'direct',
  url: `${upstream.url}/chat/completions`,
  headers: { 'content-type': 'application/json', authorization: 'Bearer sk-direct' },
  body: body(MODEL, false),
  streamBody: body(MODEL, true),
};

const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '4h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '4h' });
const dataDir = await mkdtemp(join(tmpdir(), 'aib-gw-overhead-'));
const tag = `gwo_${process.pid}`;
const pgConn = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'postgres', database: 'test' };
const storages = {
  memory: { type: 'memory' },
  sqlite: { type: 'sqlite', dir: dataDir },
  postgres: { type: 'postgres', postgres: { ...pgConn, schema: tag, connectTimeoutMs: 5000, queryTimeoutMs: 5000 } },
  redis: { type: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix: `${tag}:` } },
};

// Does the built server know ai.passThrough (the /v1 pass-through fast path, issue 41)?
const { ConfigSchema } = await import('@ai-backend/core');
const schema = typeof ConfigSchema === 'function' ? ConfigSchema() : ConfigSchema;
const hasSwitch = schema.safeParse({ ai: { passThrough: false } }).success;
const passModes = (process.env.GW_PASSTHROUGH ?? (hasSwitch ? 'off,on' : 'default')).split(',');
if (!hasSwitch && passModes.some((m) => m !== 'default'))
  throw new Error('this build has no ai.passThrough switch: GW_PASSTHROUGH=default');

const ourConfig = (storage, pass) => ({
  storage,
  mcp: { auth: { authType: 'jwt' } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: {
    providers: { openai: { baseUrl: upstream.url, apiKey: 'sk-bench-server-key', api: 'chat' } },
    ...(pass === 'default' ? {} : { passThrough: pass === 'on' }),
  },
});
const rpc = async (url, token, method, params) => {
  const r = await (
    await fetch(url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
  ).json();
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
};
const credited = new Set();
/**
 * Ours on `store`. A durable store is credited by a server that is then stopped, so the measured
 * one starts fresh on data that is already there (a restart); the memory store keeps nothing, so
 * its credit is one /rpc call to the measured server before its warm-up (noted in the docs).
 */
async function startOurs(store, pass, metered) {
  const config = JSON.stringify(ourConfig(storages[store], pass));
  if (metered && store !== 'memory' && !credited.has(store)) {
    const s = await startServer(here('./servers/ai-backend.mjs'), [config]);
    children.push(s.child);
    await rpc(s.url, admin, 'billing.creditTokens', { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'c' });
    await s.stop();
    credited.add(store);
  }
  const s = await startServer(here('./servers/ai-backend.mjs'), [config]);
  children.push(s.child);
  if (metered && store === 'memory')
    await rpc(s.url, admin, 'billing.creditTokens', { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'c' });
  return s;
}

const rows = [
  {
    id: 'floor-fetch',
    name: 'floor: Hono + global fetch',
    start: () =>
      startServer(here('./servers/floor-pass-through.mjs'), [
        JSON.stringify({ upstream: upstream.url, token: FLOOR_TOKEN, upstreamKey: 'sk-floor', client: 'fetch' }),
      ]),
    headers: { authorization: `Bearer ${FLOOR_TOKEN}` },
    model: MODEL,
    check: (text) => text.includes('"usage"'),
  },
  {
    id: 'floor-undici',
    name: 'floor: Hono + undici request (Pool)',
    start: () =>
      startServer(here('./servers/floor-pass-through.mjs'), [
        JSON.stringify({ upstream: upstream.url, token: FLOOR_TOKEN, upstreamKey: 'sk-floor', client: 'undici', undici: undiciEntry }),
      ]),
    headers: { authorization: `Bearer ${FLOOR_TOKEN}` },
    model: MODEL,
    check: (text) => text.includes('"usage"'),
  },
];
if (!process.env.GW_NO_PORTKEY)
  rows.push({
    id: 'portkey',
    name: `Portkey gateway ${PORTKEY_VERSION} (npm)`,
    start: startPortkey,
    headers: { authorization: 'Bearer sk-portkey', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstream.url },
    model: MODEL,
    check: (text) => text.includes('"usage"'),
  });
const stores = (process.env.GW_STORES ?? 'memory,sqlite,postgres,redis').split(',');
const byokStores = (process.env.GW_BYOK_STORES ?? '').split(',').filter((s) => s && s !== 'memory');
for (const pass of passModes) {
  const suffix = pass === 'default' ? '' : `, passThrough ${pass}`;
  const idSuffix = pass === 'default' ? '' : `-${pass}`;
  // BYOK on memory, the row of record, and on the stores GW_BYOK_STORES names: what metering itself adds there.
  for (const store of ['memory', ...byokStores])
    rows.push({
      id: `ours-byok${store === 'memory' ? '' : `-${store}`}${idSuffix}`,
      name: `ours /v1 BYOK (${store})${suffix}`,
      start: () => startOurs(store, pass, false),
      headers: { authorization: `Bearer ${user}`, 'x-provider-api-key': 'sk-bench-byok' },
      model: `openai/${MODEL}`,
      // The pass-through path answers the provider's bytes and says what it charged in headers.
      check: (text, headers) => text.includes('"usage"') && !text.includes('"token_usage"') && !headers.get('x-ai-backend-tokens-charged'),
    });
  for (const store of stores)
    rows.push({
      id: `ours-${store}${idSuffix}`,
      name: `ours /v1 metered, ${store}${suffix}`,
      start: () => startOurs(store, pass, true),
      headers: { authorization: `Bearer ${user}` },
      model: `openai/${MODEL}`,
      check: (text, headers) => text.includes('"token_usage"') || Number(headers.get('x-ai-backend-tokens-charged')) > 0,
    });
}
const only = process.env.GW_ONLY?.split(',');
const selected = rows.filter((r) => r.id.startsWith('floor-') || !only || only.includes(r.id));

const results = [];
const targetOf = (row, server) => ({
  id: row.id,
  url: `${server.url}/v1/chat/completions`,
  headers: { 'content-type': 'application/json', ...row.headers },
  body: body(row.model, false),
  streamBody: body(row.model, true),
});
async function measure(row) {
  const server = await row.start();
  const gw = targetOf(row, server);
  const c0 = await cpuSeconds(server.pid);
  const first = await call(gw);
  if (!row.check(first.text, first.headers)) throw new Error(`${row.id}: unexpected answer ${first.text.slice(0, 400)}`);
  const servedBy = first.headers.get('x-ai-backend-path');
  // Cold: the independent method's warm-up (15 calls, the first one above), then the rounds.
  await burst(direct, COLD_WARMUP);
  await burst(gw, COLD_WARMUP - 1);
  const firstCallsUs = (((await cpuSeconds(server.pid)) - c0) * 1e6) / COLD_WARMUP;
  const cold = await rounds(direct, gw, server.pid);
  // Warm: 1,500 more calls each, then the same rounds.
  await burst(direct, WARM_CALLS);
  await burst(gw, WARM_CALLS);
  const warm = await rounds(direct, gw, server.pid);
  // Streamed, warm: time to first byte against the same streamed call made directly.
  // A gateway whose streams fail here is reported with the reason, not left out silently.
  let streamed;
  try {
    const firstStream = await call(gw, true);
    if (!firstStream.text.includes('[DONE]')) throw new Error(`stream without [DONE]: ${firstStream.text.slice(0, 300)}`);
    await burst(direct, STREAM_WARMUP, true);
    await burst(gw, STREAM_WARMUP, true);
    streamed = await rounds(direct, gw, server.pid, true);
  } catch (err) {
    streamed = { failed: String(err.message ?? err).slice(0, 300) };
  }
  const saturatedRun = SAT_SECONDS > 0 && SAT_ROUNDS === 1 ? await saturate(gw, server.pid) : undefined;
  await server.stop();
  console.error(
    `[gatewayOverhead] ${row.id}${servedBy ? ` (${servedBy})` : ''}: cold ${cold.overhead.toFixed(3)} warm ${warm.overhead.toFixed(3)} ttfb ${streamed.failed ?? streamed.overhead.toFixed(3)} ms (load ${await loadAverage()})`,
  );
  return { ...row, servedBy, firstCallsUs, cold, warm, streamed, saturated: saturatedRun };
}
const runsOf = new Map(selected.map((row) => [row.id, []]));
for (let rep = 0; rep < REPEAT; rep++)
  for (const row of rep % 2 ? [...selected].reverse() : selected) runsOf.get(row.id).push(await measure(row));
for (const row of selected) {
  const runs = runsOf.get(row.id);
  if (runs.length === 1) {
    results.push(runs[0]);
    continue;
  }
  const failed = runs.find((r) => r.streamed.failed)?.streamed;
  const firsts = runs.map((r) => r.firstCallsUs).sort((a, b) => a - b);
  results.push({
    ...runs[0],
    firstCallsUs: firsts[firsts.length >> 1],
    cold: pooled(runs.map((r) => r.cold)),
    warm: pooled(runs.map((r) => r.warm)),
    streamed: failed ?? pooled(runs.map((r) => r.streamed)),
  });
}
// Saturated, interleaved (GW_SATURATED_ROUNDS > 1): every row's server up at once, each warmed with
// 1,500 calls and 2 s at the load, then the rounds; req/s is the row's calls over its seconds, CPU
// per call its CPU over its calls, p50 the median of its rounds' and p99 the highest.
if (SAT_SECONDS > 0 && SAT_ROUNDS > 1) {
  const live = [];
  for (const row of selected) {
    const server = await row.start();
    const gw = targetOf(row, server);
    await burst(gw, WARM_CALLS);
    live.push({ row, server, gw, runs: [] });
  }
  for (const l of live) await load({ ...saturation(l.gw), duration: 2 });
  for (let round = 0; round < SAT_ROUNDS; round++)
    for (const l of round % 2 ? [...live].reverse() : live) l.runs.push(await saturate(l.gw, l.server.pid, 0));
  for (const l of live) {
    await l.server.stop();
    const calls = l.runs.reduce((n, r) => n + r.total, 0);
    const p50s = l.runs.map((r) => r.p50).sort((a, b) => a - b);
    results.find((r) => r.id === l.row.id).saturated = {
      rps: Math.round(calls / (SAT_ROUNDS * SAT_SECONDS)),
      p50: p50s[Math.floor(p50s.length / 2)],
      p99: Math.max(...l.runs.map((r) => r.p99)),
      errors: l.runs.reduce((n, r) => n + r.errors, 0),
      cpuUs: l.runs.reduce((us, r) => us + r.cpuUs * r.total, 0) / Math.max(1, calls),
    };
  }
}
// The upstream alone at the same saturation: what any gateway's req/s is bounded by on this machine.
const directSaturated = SAT_SECONDS > 0 ? await saturate(direct) : undefined;
const loadAfter = await loadAverage();
await upstream.stop();

// Clean up what the durable stores kept.
await rm(dataDir, { recursive: true, force: true });
if (stores.includes('postgres') && credited.has('postgres')) {
  const { default: pg } = await import('pg');
  const db = new pg.Client(pgConn);
  await db.connect();
  await db.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`).catch(() => undefined);
  await db.end();
}
if (stores.includes('redis') && credited.has('redis')) {
  const { Redis } = await import('ioredis');
  const r = new Redis({ host: '127.0.0.1', port: 6379 });
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${tag}:*`, 'COUNT', 1000);
    if (keys.length) await r.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await r.quit();
}

// ---------- report ----------
const f = (x) => x.toFixed(2);
const iqr = (v) => `${f(v.iqr[0])}..${f(v.iqr[1])}`;
const byId = Object.fromEntries(results.map((r) => [r.id, r]));
const floor = byId['floor-fetch'];
const floorU = byId['floor-undici'];
console.log(
  `\n## Gateway overhead, the independent method (${ROUNDS} rounds x ${PER_ROUND}; cold: ${COLD_WARMUP} warm-up calls after start; warm: ${WARM_CALLS} more; node ${process.version}; load average ${loadBefore} → ${loadAfter})\n`,
);
console.log(
  '| gateway | cold overhead ms (IQR) | warm overhead ms (IQR) | cold − fetch floor | warm − fetch floor | cold / fetch floor | warm / fetch floor | warm / undici floor | direct ms cold / warm |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of results)
  console.log(
    `| ${r.name} | ${f(r.cold.overhead)} (${iqr(r.cold)}) | ${f(r.warm.overhead)} (${iqr(r.warm)}) | ${f(r.cold.overhead - floor.cold.overhead)} | ${f(r.warm.overhead - floor.warm.overhead)} | ${f(r.cold.overhead / floor.cold.overhead)} | ${f(r.warm.overhead / floor.warm.overhead)} | ${f(r.warm.overhead / floorU.warm.overhead)} | ${f(r.cold.direct)} / ${f(r.warm.direct)} |`,
  );
if (REPEAT > 1) {
  // Each process's own warm figure, and ours against our BYOK row of the same pass (the rows nearest in time).
  const byok = [...runsOf.keys()].find((id) => id.startsWith('ours-byok'));
  console.log(
    `\nWarm overhead per process (${REPEAT} passes, the rows' order reversed every other pass), ms; in brackets: minus our BYOK row's of the same pass.\n`,
  );
  console.log(`| gateway | ${Array.from({ length: REPEAT }, (_, i) => `pass ${i + 1}`).join(' | ')} |`);
  console.log(`|---|${'---|'.repeat(REPEAT)}`);
  for (const [id, runs] of runsOf)
    console.log(
      `| ${runs[0].name} | ${runs
        .map(
          (r, i) =>
            f(r.warm.overhead) +
            (byok && id.startsWith('ours-') && id !== byok ? ` (${f(r.warm.overhead - runsOf.get(byok)[i].warm.overhead)})` : ''),
        )
        .join(' | ')} |`,
    );
}
console.log(
  "\nThe gateway process's CPU per call (all threads, /proc schedstat): the 15 warm-up calls after start, the cold rounds, the warm rounds.\n",
);
console.log(
  '| gateway | first 15 calls µs | cold rounds µs | warm rounds µs | cold / warm | warm − fetch floor µs | warm / fetch floor | warm / undici floor |',
);
console.log('|---|---|---|---|---|---|---|---|');
const us = (x) => Math.round(x);
for (const r of results)
  console.log(
    `| ${r.name} | ${us(r.firstCallsUs)} | ${us(r.cold.cpuUs)} | ${us(r.warm.cpuUs)} | ${f(r.cold.cpuUs / r.warm.cpuUs)} | ${us(r.warm.cpuUs - floor.warm.cpuUs)} | ${f(r.warm.cpuUs / floor.warm.cpuUs)} | ${f(r.warm.cpuUs / floorU.warm.cpuUs)} |`,
  );
console.log(
  '\nStreamed (`stream: true`, include_usage), warm: time to the first byte of the body against the same stream made directly.\n',
);
console.log(
  "| gateway | TTFB overhead ms (IQR) | non-streamed warm overhead ms | TTFB − non-streamed | TTFB overhead − fetch floor's | gateway CPU µs/stream |",
);
console.log('|---|---|---|---|---|---|');
for (const r of results)
  if (r.streamed.failed)
    console.log(`| ${r.name} | failed: ${r.streamed.failed.replaceAll('|', '/')} | ${f(r.warm.overhead)} | - | - | - |`);
  else
    console.log(
      `| ${r.name} | ${f(r.streamed.overhead)} (${iqr(r.streamed)}) | ${f(r.warm.overhead)} | ${f(r.streamed.overhead - r.warm.overhead)} | ${f(r.streamed.overhead - floor.streamed.overhead)} | ${Math.round(r.streamed.cpuUs)} |`,
    );
if (SAT_SECONDS > 0) {
  const portkey = byId.portkey?.saturated;
  console.log(
    `\nSaturated: ${SAT_CONNECTIONS} connections, ${SAT_ROUNDS > 1 ? `${SAT_ROUNDS} interleaved rounds of ${SAT_SECONDS} s, every row's server running` : `${SAT_SECONDS} s after a 2 s warm-up`} (autocannon); the upstream called directly: ${directSaturated.rps} req/s.\n`,
  );
  console.log('| gateway | req/s | p50 / p99 ms | errors | gateway CPU µs/call | req/s / Portkey | CPU / Portkey | req/s / fetch floor |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const s = r.saturated;
    const vsPortkey = portkey ? `${f(s.rps / portkey.rps)} | ${f(s.cpuUs / portkey.cpuUs)}` : '- | -';
    console.log(
      `| ${r.name} | ${s.rps} | ${s.p50} / ${s.p99} | ${s.errors} | ${us(s.cpuUs)} | ${vsPortkey} | ${f(s.rps / floor.saturated.rps)} |`,
    );
  }
}
if (process.env.GW_JSON)
  await writeFile(
    process.env.GW_JSON,
    JSON.stringify({ loadBefore, loadAfter, node: process.version, results: results.map(({ start, check, ...r }) => r) }, null, 2),
  );
process.exit(0);
