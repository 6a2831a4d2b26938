#!/usr/bin/env node
// Soak: one server (built package, default store) in a child process with its old space capped
// (--max-old-space-size=192, so garbage is collected and what is kept shows), under mixed traffic
// at a steady rate, reporting RSS and heap after a full GC (V8's own; --gc forced: two forced ones
// at every sample) over time and their least-squares slope over the second half of the run. Traffic, per step (weights below): metered
// ai.generateText on /rpc and /trpc, /v1/chat/completions plain and streamed, /v1/messages, BYOK
// calls, upstream faults ([[upstream:500]] and friends), MCP 2025 sessions that call a tool and
// walk away (9 in 10) or DELETE, MCP 2026-07-28 stateless calls, API keys created, used and
// revoked, the console polling admin.overview; a new user every 20 steps.
//
//   node bench/soak.mjs --minutes 2            (smoke)
//   node bench/soak.mjs --minutes 60 --rate 60 (by hand)
// Options: --minutes (default 2), --rate steps/s (default 40), --sample seconds (default 10),
// --heap MB for --max-old-space-size (default 192), --root <built checkout> (another build, e.g. main
// before a change, started from its bench/servers/soak-server.mjs or, without one, this one's copy),
// --snapshots (heap snapshots of the server at the middle and the end, to diff what it kept), --snapshots-at 20,40
// (at those minutes instead of the middle),
// --only <step names, comma-separated> (one kind of traffic at a time, e.g. --only 'v1 chat,byok'),
// --node-flags '<flags>' (more flags for the server's node, e.g. '--trace-opt --trace-deopt-verbose --trace-gc':
// each sample then counts the functions optimized and deoptimized, optimized code thrown away and why, and full
// GCs since the last one; the summary names the functions optimized most, with how many SharedFunctionInfos
// each: many means code created anew, e.g. by new Function),
// --gc natural|forced (default natural: see heap() below; a --root build whose soak-server.mjs predates
// 'heap:natural' needs forced).
// Target (issue 37): RSS slope over the second half of a one-hour run <= 1 MB per 10 minutes.
import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { startServer } from './lib.mjs';

const args = Object.fromEntries(process.argv.slice(2).flatMap((a, i, all) => (a.startsWith('--') ? [[a.slice(2), all[i + 1]]] : [])));
const minutes = Number(args.minutes ?? 2);
const rate = Number(args.rate ?? 40);
const sampleSec = Number(args.sample ?? 10);
const heapMb = Number(args.heap ?? 192);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'soak-jwt-secret-0123456789abcdef0123456789';
const MODEL = 'openai/gpt-5-mini';

const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
children.push(upstream.child);

let script = here('./servers/soak-server.mjs');
if (args.root) {
  script = join(args.root, 'bench/servers/soak-server.mjs');
  if (!existsSync(script)) await copyFile(here('./servers/soak-server.mjs'), script);
}
// The default store (SQLite), in a directory of this run: every run starts from an empty store.
const dataDir = await mkdtemp(join(tmpdir(), 'ai-backend-soak-'));
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
const config = {
  storage: { type: 'sqlite', dir: dataDir },
  mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-soak-server-key' } } },
};
/** --trace-opt / --trace-deopt lines from the server, counted per sample (kind) and over the run (function). */
const trace = { optimized: 0, deopts: 0, marked: 0, fullGcs: 0, forcedGcs: 0, invalidated: {} };
const traceByName = { optimized: new Map(), deopts: new Map() };
function traced(line) {
  // '[completed optimizing 0x… <JSFunction name (sfi = 0x…)> (target TURBOFAN)]',
  // '[bailout (kind: …): begin. deoptimizing 0x… <JSFunction …'
  // --trace-deopt-verbose: optimized code thrown away without a deopt on the stack, and why.
  const dep = /^\[marking dependent code .*reason: ([^\]]+)\]/.exec(line);
  if (dep) {
    trace.invalidated[dep[1]] = (trace.invalidated[dep[1]] ?? 0) + 1;
    return;
  }
  // --trace-gc: full collections, V8's own and the soak's (gc(): reason 'testing').
  if (/ms: Mark-(Compact|Sweep)/.test(line)) {
    trace[line.includes(' testing;') ? 'forcedGcs' : 'fullGcs']++;
    return;
  }
  const kind = line.startsWith('[completed optimizing')
    ? 'optimized'
    : line.startsWith('[bailout')
      ? 'deopts'
      : line.startsWith('[marking')
        ? 'marked'
        : undefined;
  if (!kind) return;
  trace[kind]++;
  const m = traceByName[kind];
  if (!m) return;
  const fn = /<JSFunction ([^ >]*) ?\(sfi = (\w+)\)/.exec(line);
  const name = fn?.[1] || '(anonymous)';
  const e = m.get(name) ?? { n: 0, sfis: new Set() };
  e.n++;
  // Many SharedFunctionInfos under one name: the function is created anew (new Function, eval), not reoptimized.
  if (fn) e.sfis.add(fn[2]);
  m.set(name, e);
}
const server = await new Promise((resolve, reject) => {
  const nodeFlags = args['node-flags'] ? args['node-flags'].split(/\s+/).filter(Boolean) : [];
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, '--expose-gc', ...nodeFlags, script, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  children.push(child);
  let out = '';
  let ready = false;
  child.stdout.on('data', (d) => {
    out += d;
    const lines = out.split('\n');
    out = lines.pop() ?? '';
    for (const l of lines) {
      if (!ready && l.startsWith('{')) {
        ready = true;
        resolve({ ...JSON.parse(l), child, pid: child.pid });
      } else traced(l);
    }
  });
  child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
});
let serverGone = false;
server.child.on('exit', (code, signal) => {
  serverGone = true;
  console.error(`server exited (${code ?? signal}) at ${((Date.now() - started) / 60_000).toFixed(1)} min`);
});
const url = server.url;

const ask = (what, timeoutMs = 10_000) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    server.child.once('message', (m) => {
      clearTimeout(timer);
      resolve(m);
    });
    server.child.send(what);
  });
// --gc forced: every sample forces two full collections and reads the heap after them (what the soak
// did until issue 37's measurements). Default (natural): no collection is forced; the heap is the one
// after V8's own last full collection in the sample's interval. Forcing one every 10-20 s made the
// server throw away and recompile optimized code at each (maps embedded in it died), which grew the
// code and old spaces: RSS the soak caused itself (docs/performance.md, soak).
const gcMode = args.gc ?? 'natural';
if (gcMode !== 'natural' && gcMode !== 'forced') throw new Error('--gc natural|forced');
const heap = () => ask(gcMode === 'forced' ? 'heap' : 'heap:natural');
/** RSS and its parts from /proc (kB → MB): anonymous (heap, malloc), file-backed (code, mapped files), shared memory. */
async function rssParts() {
  const status = await readFile(`/proc/${server.pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile'), shmem: kb('RssShmem') };
}

const admin = `Bearer ${await mintDevToken({ secret: SECRET, sub: 'soak-admin', scopes: ['mcp:admin'], expiresIn: '24h' })}`;
const json = { 'content-type': 'application/json' };
async function post(path, body, auth, extra = {}) {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { ...json, ...(auth ? { authorization: auth } : {}), ...extra },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers };
}
/** A JSON-RPC call; an error answer counts as failed (status 400) even though HTTP said 200. */
const rpc = (method, params, auth) =>
  post('/rpc', { jsonrpc: '2.0', id: 1, method, params }, auth).then((r) => ({
    ...r,
    status: r.text.startsWith('{"jsonrpc":"2.0","id":1,"error"') || r.text.includes('"error":{') ? Math.max(r.status, 400) : r.status,
  }));

let user;
let userN = 0;
async function newUser() {
  const sub = `soak-user-${++userN}`;
  const token = `Bearer ${await mintDevToken({ secret: SECRET, sub, expiresIn: '24h' })}`;
  await rpc('billing.creditTokens', { userId: sub, tokens: 1e9, type: 'subscription', idempotencyKey: `soak-credit-${sub}` }, admin);
  user = { sub, token };
}

const INPUT = {
  content: 'Summarise the soak in one line.',
  systemPrompt: 'You are terse.',
  provider: 'openai',
  options: { maxTokens: 32 },
};
const CHAT = { model: MODEL, messages: [{ role: 'user', content: 'One line, please.' }], max_tokens: 32 };
const ACCEPT = 'application/json, text/event-stream';
const LEGACY = '2025-11-25';

/** An MCP 2025 session: initialize, list, call; 9 in 10 walk away without DELETE. */
async function mcpSession(u) {
  const h = { accept: ACCEPT };
  const init = await post(
    '/mcp',
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'soak', version: '1' } },
    },
    u.token,
    h,
  );
  const sid = init.headers.get('mcp-session-id');
  if (!sid) return init.status;
  const s = { ...h, 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY };
  await post('/mcp', { jsonrpc: '2.0', method: 'notifications/initialized' }, u.token, s);
  await post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, u.token, s);
  const r = await post(
    '/mcp',
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'Ada', language: 'de' } } },
    u.token,
    s,
  );
  if (Math.random() < 0.1) await fetch(url + '/mcp', { method: 'DELETE', headers: { ...s, authorization: u.token } }).then((x) => x.text());
  return r.status;
}

/** One 2026-07-28 request: no session. */
const mcpModern = (u) =>
  post(
    '/mcp',
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'greeting',
        arguments: { name: 'Ada', language: 'de' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'soak', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
    u.token,
    { accept: ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greeting' },
  ).then((r) => r.status);

/** An API key created, used on /v1 and revoked. */
async function keyLifecycle(u) {
  const made = await rpc('keys.create', { name: `soak-${Date.now()}` }, u.token);
  const created = JSON.parse(made.text).result;
  if (!created?.key) return made.status;
  await post('/v1/chat/completions', CHAT, `Bearer ${created.key}`);
  return (await rpc('keys.revoke', { id: created.apiKey.id }, u.token)).status;
}

const FAULTS = ['500', '429', 'drop'];
const STEPS = [
  [8, 'rpc generate', (u) => rpc('ai.generateText', INPUT, u.token)],
  [4, 'trpc generate', (u) => post('/trpc/ai.generateText', { json: INPUT }, u.token)],
  [6, 'v1 chat', (u) => post('/v1/chat/completions', CHAT, u.token)],
  [4, 'v1 chat stream', (u) => post('/v1/chat/completions', { ...CHAT, stream: true }, u.token)],
  [
    3,
    'v1 messages',
    (u) =>
      post('/v1/messages', { model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'One line.' }] }, u.token, {
        'anthropic-version': '2023-06-01',
      }),
  ],
  [4, 'byok', (u) => rpc('ai.generateText', { ...INPUT, apiKey: 'sk-soak-byok-key' }, u.token)],
  [
    2,
    'upstream fault',
    (u) => rpc('ai.generateText', { ...INPUT, content: `[[upstream:${FAULTS[Math.floor(Math.random() * FAULTS.length)]}]]` }, u.token),
  ],
  [8, 'mcp 2025 session', mcpSession],
  [4, 'mcp 2026 call', mcpModern],
  [2, 'api key lifecycle', keyLifecycle],
  [2, 'console poll', () => rpc('admin.overview', { days: 7 }, admin)],
];
if (args.only) {
  const only = new Set(args.only.split(','));
  for (let i = STEPS.length - 1; i >= 0; i--) if (!only.has(STEPS[i][1])) STEPS.splice(i, 1);
  if (STEPS.length === 0) throw new Error(`--only matches no step`);
}
const total = STEPS.reduce((n, [w]) => n + w, 0);
const pick = () => {
  let r = Math.random() * total;
  for (const step of STEPS) if ((r -= step[0]) < 0) return step;
  return STEPS[0];
};

const counts = Object.fromEntries(STEPS.map(([, name]) => [name, { ok: 0, failed: 0 }]));
let inFlight = 0;
let skipped = 0;
let steps = 0;
await newUser();
const started = Date.now();
const end = started + minutes * 60_000;
const samples = [];

async function sample() {
  const h = await heap();
  if (!h || serverGone) return;
  const r = await rssParts();
  const s = {
    min: +((Date.now() - started) / 60_000).toFixed(2),
    rssMb: +r.rss.toFixed(1),
    // With --gc natural, null when V8 ran no full collection in the interval.
    heapMb: h.heapUsed === undefined ? null : +(h.heapUsed / 2 ** 20).toFixed(1),
    fullGcs: h.fullGcs,
    // What RSS is made of: anonymous memory outside the JS heap (malloc: SQLite, buffers, the allocator's
    // free pages) shows as anon minus the heap; file-backed and shared pages (SQLite's -shm) apart.
    anonMb: +r.anon.toFixed(1),
    fileMb: +r.file.toFixed(1),
    shmemMb: +r.shmem.toFixed(1),
    externalMb: h.external === undefined ? undefined : +(h.external / 2 ** 20).toFixed(1),
    // The heap V8 has committed (used or not); with --root on an older build these two are absent.
    heapTotalMb: h.heapTotal === undefined ? undefined : +(h.heapTotal / 2 ** 20).toFixed(1),
    newSpaceMb: h.spaces?.new_space === undefined ? undefined : +(h.spaces.new_space / 2 ** 20).toFixed(1),
    // Every V8 space's committed size (old, code, large objects, ...): which one holds the pages.
    spacesMb:
      h.spaces && Object.fromEntries(Object.entries(h.spaces).map(([k, v]) => [k.replace(/_space$/, ''), +(v / 2 ** 20).toFixed(1)])),
    spacesUsedMb:
      h.spacesUsed &&
      Object.fromEntries(Object.entries(h.spacesUsed).map(([k, v]) => [k.replace(/_space$/, ''), +(v / 2 ** 20).toFixed(1)])),
    steps,
    ...(args['node-flags'] ? { trace: { ...trace } } : {}),
  };
  trace.optimized = trace.deopts = trace.marked = trace.fullGcs = trace.forcedGcs = 0;
  trace.invalidated = {};
  samples.push(s);
  console.log(JSON.stringify(s));
}

const tick = setInterval(() => {
  if (serverGone) return;
  // A steady rate, not a closed loop: a step that cannot start (too many still running) is skipped and counted.
  if (inFlight >= 64) return void skipped++;
  const [, name, run] = pick();
  steps++;
  inFlight++;
  const u = user;
  if (steps % 20 === 0) void newUser().catch(() => undefined);
  Promise.resolve()
    .then(() => run(u))
    .then((r) => {
      const status = typeof r === 'number' ? r : r.status;
      const failed = status >= 400 && name !== 'upstream fault';
      counts[name][failed ? 'failed' : 'ok']++;
      if (failed && process.env.SOAK_DEBUG) console.error(name, status, typeof r === 'object' ? r.text?.slice(0, 200) : '');
    })
    .catch((err) => {
      counts[name].failed++;
      if (process.env.SOAK_DEBUG) console.error(name, String(err));
    })
    .finally(() => inFlight--);
}, 1000 / rate);

await sample();
// --snapshots: at the middle and the end; --snapshots-at 20,40: at those minutes (early enough to diff while it runs).
const snapAt = args['snapshots-at'] ? args['snapshots-at'].split(',').map(Number) : 'snapshots' in args ? [minutes / 2] : [];
while (Date.now() < end && !serverGone) {
  await new Promise((r) => setTimeout(r, sampleSec * 1000));
  await sample();
  if (snapAt.length > 0 && Date.now() >= started + snapAt[0] * 60_000) {
    snapAt.shift();
    console.log(JSON.stringify({ ...(await ask('snapshot', 120_000)), min: +((Date.now() - started) / 60_000).toFixed(2) }));
  }
}
if ('snapshots' in args && !serverGone) console.log(JSON.stringify(await ask('snapshot', 120_000)));
clearInterval(tick);
const keptAtEnd = serverGone ? undefined : await ask('heap');

/** Least-squares slope of `key` over the second half, in MB per 10 minutes. */
function slope(key) {
  const half = samples.filter((s) => s.min >= minutes / 2 && typeof s[key] === 'number');
  if (half.length < 2) return NaN;
  const mx = half.reduce((a, s) => a + s.min, 0) / half.length;
  const my = half.reduce((a, s) => a + s[key], 0) / half.length;
  const num = half.reduce((a, s) => a + (s.min - mx) * (s[key] - my), 0);
  const den = half.reduce((a, s) => a + (s.min - mx) ** 2, 0);
  return +((num / den) * 10).toFixed(1);
}
const first = samples[0];
const last = samples.at(-1);
// The rate reached per 10 minutes: on a loaded machine steps are skipped (64 in flight), and what the
// server keeps (parked sessions, stored events) follows the rate, so a slope is read beside it.
const stepsPerMinute = [];
for (let w = 0; w < minutes; w += 10) {
  const win = samples.filter((s) => s.min >= w && s.min < w + 10);
  if (win.length > 1) stepsPerMinute.push(Math.round((win.at(-1).steps - win[0].steps) / (win.at(-1).min - win[0].min)));
}
console.log(
  JSON.stringify({
    minutes,
    rate,
    steps,
    skipped,
    serverSurvived: !serverGone,
    rssMb: { first: first?.rssMb, last: last?.rssMb, max: Math.max(...samples.map((s) => s.rssMb)) },
    gc: gcMode,
    heapAfterGcMb: {
      first: samples.find((s) => s.heapMb !== null)?.heapMb,
      last: samples.findLast((s) => s.heapMb !== null)?.heapMb,
      max: Math.max(...samples.map((s) => s.heapMb ?? 0)),
      // What the server keeps at the end: two forced full collections (after the last sample).
      keptAtEnd: keptAtEnd === undefined ? undefined : +(keptAtEnd.heapUsed / 2 ** 20).toFixed(1),
    },
    fullGcsPerMinute: +(samples.reduce((n, s) => n + (s.fullGcs ?? 0), 0) / (last.min || 1)).toFixed(1),
    anonMb: { first: first?.anonMb, last: last?.anonMb },
    slopeSecondHalfMbPer10Min: {
      rss: slope('rssMb'),
      heap: slope('heapMb'),
      anon: slope('anonMb'),
      file: slope('fileMb'),
      heapTotal: slope('heapTotalMb'),
    },
    stepsPerMinuteBy10Min: stepsPerMinute,
    counts,
    ...(args['node-flags']
      ? {
          traceTop: Object.fromEntries(
            Object.entries(traceByName).map(([k, m]) => [
              k,
              [...m]
                .sort((a, b) => b[1].n - a[1].n)
                .slice(0, 25)
                .map(([name, e]) => [name, e.n, e.sfis.size]),
            ]),
          ),
        }
      : {}),
  }),
);
process.exit(0);
