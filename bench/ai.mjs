// AI gateway overhead, in ONE run: ai.generateText through the server (POST /rpc, JWT user with
// credits, platform metering on) versus the same provider wire request sent straight to the test
// upstream, on the memory, SQLite and PostgreSQL (+ Redis for the shared state) stores, beside a
// BYOK call (the request's own key: no metering) on the memory store. PostgreSQL runs twice: all
// calls from one user (the worst case: that user's transactions queue on its account row) and
// from 50 users, one per connection. Upstream, each server and
// this load generator are separate processes. Usage (after `pnpm build`, with Redis on
// 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432, database `test`):
//   node bench/ai.mjs [seconds=10] [pacedRate=100] [sections=generate,stream]
//
// Sections: `generate` (ai.generateText on /rpc with each store, BYOK, and the OpenAI-compatible
// POST /v1/chat/completions on the memory-store server, against the direct wire request) and
// `stream` (time to first token: a streamed /v1/chat/completions with stream: true against the
// same streamed wire request sent straight to the upstream; paced only).
//
// Two measurements, both over 50 keep-alive connections:
// 1. saturated: autocannon, 50 connections as fast as they go (closed loop). Latency there is
//    mostly queueing (50 / throughput), so the delta is a throughput comparison.
// 2. paced: the same 50 connections at a fixed `pacedRate` req/s, below saturation, timed per
//    request with hrtime (autocannon reports whole milliseconds only). This delta is the latency
//    a request gains by going through the gateway, the number the issue's target is about.
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { mintDevToken } from '@ai-backend/auth';
import { startServer } from './lib.mjs';

const duration = Number(process.argv[2] ?? 10);
const pacedRate = Number(process.argv[3] ?? 100);
const sections = new Set((process.argv[4] ?? 'generate,stream').split(','));
const CONNECTIONS = 50;
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-ai-jwt-secret-0123456789abcdef0123';
const USER = 'bench-user';
const INPUT = { content: 'Summarise the benchmark in one line.', systemPrompt: 'You are terse.', provider: 'openai', options: { maxTokens: 64 } };
// The same call in the OpenAI wire format (the default OpenAI model, as INPUT uses).
const CHAT = { model: 'openai/gpt-5-mini', messages: [{ role: 'system', content: INPUT.systemPrompt }, { role: 'user', content: INPUT.content }], max_tokens: 64 };

const rpc = async (url, token, method, params) => {
  const res = await fetch(url + '/rpc', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
};

// Child processes survive a crash of this script unless told otherwise.
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
children.push(upstream.child);
const dir = await mkdtemp(join(tmpdir(), 'bench-ai-'));
const keyPrefix = `bench-ai-${process.pid}-${Date.now()}:`;
const user = await mintDevToken({ secret: SECRET, sub: USER, expiresIn: '2h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });

async function gateway(name, storage) {
  const config = {
    storage,
    mcp: { auth: { authType: 'jwt' } },
    jwt: { secret: SECRET },
    serverProviders: ['openai'],
    ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
  };
  const s = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  children.push(s.child);
  await rpc(s.url, admin, 'billing.creditTokens', { userId: USER, tokens: 1e12, type: 'subscription', idempotencyKey: 'bench-credit' });
  const first = await rpc(s.url, user, 'ai.generateText', INPUT);
  if (!first.success || !first.tokenUsage) throw new Error('warm-up call was not platform-paid');
  return { ...s, name };
}

// Memory is the reference without storage I/O; SQLite (one server) and PostgreSQL + Redis
// (several servers) are the deployment choices. The PostgreSQL tables go to a schema of this run.
const schema = `bench_${process.pid}`;
const pgConn = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'root', database: 'test' };
const memory = await gateway('gateway, memory store (reference)', { type: 'memory' });
const sqlite = await gateway('gateway, SQLite store', { type: 'sqlite', dir });
const postgres = await gateway('gateway, PostgreSQL + Redis', { type: 'postgres', postgres: { ...pgConn, schema, connectTimeoutMs: 5000, queryTimeoutMs: 5000 }, shared: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix } });
const gateways = { memory, sqlite, postgres };

// The exact request the gateway sent upstream, replayed directly.
const wire = await (await fetch(upstream.control)).json();
const HOP = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);
const targets = {
  direct: { name: 'direct to test upstream', pid: upstream.pid, url: upstream.url + wire.path, headers: Object.fromEntries(Object.entries(wire.headers).filter(([k]) => !HOP.has(k))), body: JSON.stringify(wire.body), ok: (b) => b.includes('"output"') },
};
for (const [key, g] of Object.entries(gateways)) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ai.generateText', params: INPUT });
  targets[key] = { name: g.name, pid: g.pid, url: g.url + '/rpc', headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` }, body, ok: (b) => b.includes('"tokenUsage"') };
}
// The same calls from 50 users (one per connection) on PostgreSQL: one user's billing transactions
// queue on that user's account row, so a single hot user is the worst case, not the usual one.
const manyUsers = await Promise.all(
  Array.from({ length: CONNECTIONS }, async (_, i) => {
    const sub = `${USER}-${i}`;
    await rpc(postgres.url, admin, 'billing.creditTokens', { userId: sub, tokens: 1e12, type: 'subscription', idempotencyKey: `bench-credit-${i}` });
    return `Bearer ${await mintDevToken({ secret: SECRET, sub, expiresIn: '2h' })}`;
  }),
);
targets.postgresUsers = { ...targets.postgres, name: `gateway, PostgreSQL + Redis, ${CONNECTIONS} users`, authorizations: manyUsers };
const auth = { 'content-type': 'application/json', authorization: `Bearer ${user}` };
targets.openaiCompat = { name: 'gateway, memory store, POST /v1/chat/completions', pid: memory.pid, url: memory.url + '/v1/chat/completions', headers: auth, body: JSON.stringify(CHAT), ok: (b) => b.includes('"token_usage"') };

// Streaming: one streamed call through the gateway, then its exact wire request replayed directly.
// Time to first token = until the first chunk that carries text (not the gateway's empty role chunk).
await (await fetch(memory.url + '/v1/chat/completions', { method: 'POST', headers: auth, body: JSON.stringify({ ...CHAT, stream: true }) })).text();
const streamWire = await (await fetch(upstream.control)).json();
targets.directStream = {
  name: 'direct to test upstream, streamed',
  pid: upstream.pid,
  url: upstream.url + streamWire.path,
  headers: Object.fromEntries(Object.entries(streamWire.headers).filter(([k]) => !HOP.has(k))),
  body: JSON.stringify(streamWire.body),
  ok: (b) => b.includes('response.completed'),
  first: /output_text\.delta/,
};
targets.openaiStream = { name: 'gateway, memory store, /v1 stream: true', pid: memory.pid, url: memory.url + '/v1/chat/completions', headers: auth, body: JSON.stringify({ ...CHAT, stream: true }), ok: (b) => b.includes('[DONE]') && b.includes('"token_usage"'), first: /"content":"[^"]/ };
// The same call with the request's own key (BYOK): no reserve or settle, one usage record.
targets.byok = {
  name: 'gateway, memory store, BYOK (no metering)',
  pid: memory.pid,
  url: memory.url + '/rpc',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ai.generateText', params: { ...INPUT, apiKey: 'sk-bench-user-key' } }),
  ok: (b) => b.includes('"success":true') && !b.includes('"tokenUsage"'),
};

/** CPU seconds (user + system) a process has used so far: robust on a shared machine, unlike req/s. */
async function cpuSeconds(pid) {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Closed loop: autocannon, 50 connections as fast as they go. Bodies are checked (/rpc errors are HTTP 200). */
async function saturated(t) {
  const opts = { url: t.url, method: 'POST', headers: t.headers, body: t.body, connections: CONNECTIONS, verifyBody: t.ok };
  if (t.authorizations) {
    let i = 0;
    opts.requests = [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: t.authorizations[i++ % t.authorizations.length] } }) }];
  }
  const w = await autocannon({ ...opts, duration: 2 });
  const r = await autocannon({ ...opts, duration });
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors + r.timeouts + r.mismatches, n: r.requests.total, warmupN: w.requests.total };
}

/** Open loop at `rate` req/s over 50 keep-alive sockets; per-request hrtime latency, exact percentiles. */
async function paced(t, rate = pacedRate, seconds = duration) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const u = new URL(t.url);
  let sent = 0;
  const one = () =>
    new Promise((resolve) => {
      const started = process.hrtime.bigint();
      const headers = { ...t.headers, 'content-length': Buffer.byteLength(t.body) };
      if (t.authorizations) headers.authorization = t.authorizations[sent++ % t.authorizations.length];
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers }, (res) => {
        let body = '';
        let ttft;
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
          if (t.first && ttft === undefined && t.first.test(body)) ttft = Number(process.hrtime.bigint() - started) / 1e6;
        });
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, ttft, ok: res.statusCode === 200 && t.ok(body) }));
      });
      req.on('error', () => resolve({ ms: 0, ok: false }));
      req.end(t.body);
    });
  // Open all 50 connections first, then warm up.
  await Promise.all(Array.from({ length: CONNECTIONS }, one));
  const run = async (n) => {
    const pending = [];
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(one());
    }
    return Promise.all(pending);
  };
  await run(rate);
  const results = await run(rate * seconds);
  agent.destroy();
  const okRes = results.filter((r) => r.ok);
  // For streams the figure is time to first token; total time is reported beside it.
  const ms = okRes.map((r) => (t.first ? r.ttft : r.ms)).sort((a, b) => a - b);
  const total = okRes.map((r) => r.ms).sort((a, b) => a - b);
  const pct = (arr, p) => arr[Math.min(arr.length - 1, Math.floor(arr.length * p))];
  return { rps: rate, p50: pct(ms, 0.5), p99: pct(ms, 0.99), totalP50: pct(total, 0.5), errors: results.length - ms.length, n: results.length };
}

const rows = [];
async function measure(mode, key) {
  const t = targets[key];
  const cpu0 = await cpuSeconds(t.pid);
  const r = await (mode === 'saturated' ? saturated : paced)(t);
  if (mode === 'ttft') r.note = `total p50 ${r.totalP50.toFixed(2)} ms`;
  // Server CPU per request, from saturated runs only (warm-up included in both CPU and count):
  // at a low fixed rate the per-request figure is mostly idle-loop and timer cost.
  if (mode === 'saturated') r.cpuUs = ((await cpuSeconds(t.pid)) - cpu0) * 1e6 / (r.n + r.warmupN);
  if (r.errors) throw new Error(`${targets[key].name} (${mode}): ${r.errors} failed or unexpected answers`);
  const row = { mode, key, name: targets[key].name, ...r };
  console.error(`${mode.padEnd(9)} ${row.name}: ${r.rps} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${r.cpuUs ? `${Math.round(r.cpuUs)} µs CPU/request ` : ''}(${r.n} requests)`);
  rows.push(row);
}

try {
  // Interleaved, with the direct baseline before and after the gateways, so drift shows.
  if (sections.has('generate')) {
    for (const mode of ['paced', 'saturated']) {
      await measure(mode, 'direct');
      for (const key of [...Object.keys(gateways), 'postgresUsers', 'byok', 'openaiCompat']) await measure(mode, key);
      await measure(mode, 'direct');
    }
  }
  if (sections.has('stream')) {
    await measure('ttft', 'directStream');
    await measure('ttft', 'openaiStream');
    await measure('ttft', 'directStream');
  }
} finally {
  await Promise.all(Object.values(gateways).map((g) => g.stop()));
  await upstream.stop();
  await rm(dir, { recursive: true, force: true });
  const cleanup = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await cleanup.connect();
  const keys = await cleanup.keys(`${keyPrefix}*`);
  if (keys.length) await cleanup.del(...keys);
  await cleanup.quit();
  const db = new pg.Client(pgConn);
  await db.connect();
  await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await db.end();
}

const f = (n) => (Math.round(n * 100) / 100).toFixed(2);
console.log(`\n### AI gateway overhead: ${duration}s per scenario, ${CONNECTIONS} connections, node ${process.version}, upstream request ${wire.method} ${wire.path}\n`);
console.log('| mode | scenario | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms | server CPU µs/request |');
console.log('|---|---|---|---|---|---|---|---|');
for (const mode of ['paced', 'saturated', 'ttft']) {
  const direct = rows.filter((r) => r.mode === mode && (r.key === 'direct' || r.key === 'directStream'));
  if (direct.length < 2) continue;
  const base = { p50: (direct[0].p50 + direct[1].p50) / 2, p99: (direct[0].p99 + direct[1].p99) / 2 };
  for (const r of rows.filter((x) => x.mode === mode)) {
    const gw = r.key !== 'direct' && r.key !== 'directStream';
    const label = mode === 'paced' ? `paced ${pacedRate} req/s` : mode === 'ttft' ? `time to first token, paced ${pacedRate} req/s` : 'saturated';
    console.log(`| ${label} | ${r.name} | ${r.rps} | ${f(r.p50)} | ${f(r.p99)} | ${gw ? f(r.p50 - base.p50) : '-'} | ${gw ? f(r.p99 - base.p99) : '-'} | ${r.cpuUs ? Math.round(r.cpuUs) : '-'} |`);
  }
}
const rpcRow = (mode) => rows.find((r) => r.mode === mode && r.key === 'memory');
const v1Row = (mode) => rows.find((r) => r.mode === mode && r.key === 'openaiCompat');
for (const mode of ['paced', 'saturated']) {
  if (rpcRow(mode) && v1Row(mode)) console.log(`\n/v1/chat/completions vs ai.generateText on /rpc (memory store, ${mode}): p50 ${f(v1Row(mode).p50)} vs ${f(rpcRow(mode).p50)} ms, req/s ${v1Row(mode).rps} vs ${rpcRow(mode).rps}${v1Row(mode).cpuUs ? `, CPU µs/request ${Math.round(v1Row(mode).cpuUs)} vs ${Math.round(rpcRow(mode).cpuUs)}` : ''}`);
}
for (const r of rows.filter((x) => x.note)) console.log(`${r.name}: ${r.note}`);
console.log('\nadded = gateway minus the mean of the two direct runs of the same mode. Saturated latencies are whole milliseconds (autocannon).');
console.log('server CPU = user + system CPU of the process answering (gateway, or the upstream for direct runs) per request, saturated runs.');
console.log(`load average at the end: ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
