import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

/** Start a server script in its own process; resolves with its URL and pid once it prints it. */
export function startServer(script, args = [], env = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(env.NODE_FLAGS ? env.NODE_FLAGS.split(' ') : []), script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve({ ...JSON.parse(line), child, pid: child.pid, startMs: performance.now() - started, stop: () => stop(child) });
    });
    child.on('exit', (code) => reject(new Error(`${script} exited ${code}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', resolve);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

export async function rssMb(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  return Math.round(kb / 1024);
}

/**
 * One autocannon run; returns req/s and latency percentiles (ms). `setupRequest(req)`, when given,
 * rewrites each request before it is sent (e.g. a unique JSON-RPC id).
 */
export async function load({ url, method = 'GET', body, headers = {}, connections = 50, duration = 8, warmup = 2, setupRequest }) {
  const opts = { url, method, body, headers: { 'content-type': 'application/json', ...headers }, connections };
  if (setupRequest) opts.requests = [{ method, setupRequest }];
  if (warmup) await autocannon({ ...opts, duration: warmup });
  const r = await autocannon({ ...opts, duration });
  const bad = r.non2xx + r.errors + r.timeouts;
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: bad, total: r.requests.total };
}

export function table(rows, baseline) {
  const lines = ['| scenario | req/s | p50 ms | p99 ms | errors | ratio to baseline |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(`| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${baseline ? (r.rps / baseline.rps).toFixed(2) : '-'} |`);
  }
  return lines.join('\n');
}

/** Temporary folders made for this process's servers, removed when it exits (each bench run made one per SQLite server and left it). */
const tempDirs = [];
function benchTempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (tempDirs.push(dir) === 1)
    process.on('exit', () => {
      for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
    });
  return dir;
}

/**
 * Our server for /v1 calls on the pass-through fast path (bench/v1Instructions.mjs, v1BuildsAB.mjs,
 * v1StoreTimeAB.mjs): `store` 'memory' (default) or 'sqlite' (a new file of its own in a temporary
 * folder, so two servers never share one), JWT auth with `secret`, the built-in `openai` provider
 * (Chat Completions) at `upstreamUrl`, paid for by the server, so calls are BYOK or metered as the caller asks.
 */
export function v1ServerConfig(upstreamUrl, secret, store = 'memory') {
  if (store !== 'memory' && store !== 'sqlite') throw new Error(`store ${store}: memory or sqlite`);
  return {
    storage: store === 'sqlite' ? { type: 'sqlite', dir: benchTempDir('aib-v1-') } : { type: 'memory' },
    // One load generator is one address and one identity: the streams' per-client caps would refuse it.
    limits: { maxSseStreamsPerClient: 1000, maxSseStreamsPerIdentity: 1000 },
    mcp: { auth: { authType: 'jwt' } },
    jwt: { secret },
    serverProviders: ['openai'],
    ai: { providers: { openai: { baseUrl: upstreamUrl, apiKey: 'sk-bench-server-key', api: 'chat' } }, passThrough: true },
  };
}

/**
 * The billing benches' BillingService over `storage` (the metered part of a call without the gateway
 * around it), from a core module: `@ai-backend/core/internal`, or a build's `<tree>/packages/core/dist/internal.js`.
 */
export function benchBilling(core, storage) {
  const logger = core.createLogger('silent');
  return new core.BillingService(
    storage,
    new core.KeyVault(storage, { masterKey: 'bench-billing-vault-key-0123456789abcdef' }, logger),
    {
      platformFeeRate: 0.1,
      allowAnonymousServerPaid: false,
      anonymousTokensPerWindow: 0,
      anonymousWindowMs: 60_000,
      reservationTtlMs: 900_000,
    },
    logger,
  );
}

/** benchBilling with `users` users (`user-0` …) credited once. */
export async function creditedBilling(core, storage, users) {
  const billing = benchBilling(core, storage);
  for (let u = 0; u < users; u++)
    await billing.credit({ userId: `user-${u}`, tokens: 1e12, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
  return billing;
}

/**
 * Call `n`'s billing for user `n % users`: `hold` is a metered /v1 call's (the payer decision in the
 * hold's transaction, then the Hold's settle), `reserve` BillingService's reserve + settle.
 */
export async function billOneCall(billing, n, users, mode = 'hold') {
  const identity = { sub: `user-${n % users}`, scopes: [], isAdmin: false, via: 'jwt' };
  const usage = { tokensUsed: 50 + (n % 50), provider: 'openai', model: 'gpt-4o-mini' };
  if (mode === 'hold') {
    const hold = await billing.hold({
      identity,
      requestId: `r-${n}`,
      provider: 'openai',
      estimatedTokens: 100,
      byokAllowed: true,
      serverPays: true,
    });
    return hold.settle(usage);
  }
  return billing.settle(await billing.reserve({ identity, tokens: 100, requestId: `r-${n}` }), usage);
}

/** Give `userId` tokens on a server (an admin token's `billing.creditTokens` over /rpc), so its calls are metered. */
export async function creditTokens(url, adminToken, userId = 'bench-user', tokens = 1e12) {
  const r = await fetch(url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'billing.creditTokens',
      params: { userId, tokens, type: 'subscription', idempotencyKey: 'c' },
    }),
  });
  const answer = await r.json();
  if (answer.error) throw new Error(`billing.creditTokens: ${JSON.stringify(answer.error)}`);
}

/**
 * valgrind's arguments that run Node under callgrind counting nothing until told to (countInstructions),
 * its output files in `dir`, made fresh here. Append the script and its arguments.
 */
export function callgrindCommand(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${dir}/out.%p`, process.execPath];
}

/**
 * The instructions `child` (a process started with callgrindCommand(dir)) runs while `work()` runs,
 * all its threads, GC included; the child is stopped afterwards (its counts are written at exit).
 */
export async function countInstructions(child, dir, work) {
  execFileSync('callgrind_control', ['-i', 'on', String(child.pid)]);
  await work();
  execFileSync('callgrind_control', ['-i', 'off', String(child.pid)]);
  execFileSync('callgrind_control', ['-d', String(child.pid)]);
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  let ir = 0;
  for (const f of readdirSync(dir)) {
    const m = /^totals:\s+(\d+)/m.exec(readFileSync(`${dir}/${f}`, 'utf8'));
    if (m) ir += Number(m[1]);
  }
  return ir;
}

/**
 * A server script under callgrind (callgrindCommand): resolves, once it prints its URL, with the
 * URL, the child and `counted(work)`, its countInstructions.
 */
export function startUnderCallgrind(script, args, dir) {
  const child = spawn('valgrind', [...callgrindCommand(dir), script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const l = out.split('\n').find((x) => x.startsWith('{'));
      if (l) resolve({ url: JSON.parse(l).url, child, counted: (work) => countInstructions(child, dir, work) });
    });
    child.on('exit', (c) => reject(new Error(`exit ${c} ${err.slice(-2000)}`)));
  });
}

/** CPU seconds (user + system) a process has used, from /proc: robust to other load on the machine. */
export async function cpuSeconds(pid) {
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * Two servers measured in one run: each loaded in `order` (e.g. A B B A), after a 1 s warm-up of
 * its own, summing the server's CPU (from /proc) and the requests answered. `reqOf(name)` gives the
 * load options and the server's `pid`. Answers one markdown row: req/s and CPU µs per request of
 * A and B, B's CPU per request over A's, and the errors of both.
 */
export async function abRow(label, order, reqOf, { duration, connections = 50 }) {
  const acc = { A: { cpu: 0, n: 0, rps: [] }, B: { cpu: 0, n: 0, rps: [] } };
  let errors = 0;
  for (const name of order) {
    const { pid, ...req } = reqOf(name);
    await load({ ...req, connections, duration: 1, warmup: 0 });
    const c0 = await cpuSeconds(pid);
    const x = await load({ ...req, connections, duration, warmup: 0 });
    acc[name].cpu += (await cpuSeconds(pid)) - c0;
    acc[name].n += x.total;
    acc[name].rps.push(x.rps);
    errors += x.errors;
  }
  const us = (x) => (x.cpu / x.n) * 1e6;
  const rps = (x) => Math.round(x.rps.reduce((a, b) => a + b, 0) / x.rps.length);
  return `| ${label} | ${rps(acc.A)} | ${rps(acc.B)} | ${Math.round(us(acc.A))} | ${Math.round(us(acc.B))} | ${(us(acc.B) / us(acc.A)).toFixed(2)} | ${errors} |`;
}

/** The 1-minute load average, to print beside a run. */
export async function loadAverage() {
  return (await readFile('/proc/loadavg', 'utf8')).split(' ')[0];
}

/**
 * Spawn → first 200 from `/health`: resolves with the elapsed ms, the CPU ms the process used by
 * then, the pid and a stop function.
 * `urlOf` finds the server's URL in what it prints (a JSON line, or the CLI banner).
 */
export function coldStart(args, { cwd, env = {}, urlOf = (out) => /https?:\/\/127\.0\.0\.1:\d+/.exec(out)?.[0] } = {}) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(env.NODE_FLAGS ? env.NODE_FLAGS.split(' ') : []), ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let found = false;
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
    child.stdout.on('data', async (d) => {
      out += d;
      const url = !found && urlOf(out);
      if (!url) return;
      found = true;
      while ((await fetch(url + '/health').catch(() => null))?.status !== 200);
      const ms = performance.now() - t0;
      // CPU the process spent getting there: steadier than wall time on a shared machine.
      resolve({ ms, cpuMs: (await cpuSeconds(child.pid)) * 1000, url, pid: child.pid, child, stop: () => stop(child) });
    });
  });
}

/**
 * server-everything from npm in its Streamable HTTP mode on a free port of 127.0.0.1 (the MCP
 * gateway benches' upstream); resolves once it listens, with its process and /mcp URL.
 * `command` and `prefix` run it under another program (valgrind: its arguments, then node).
 */
export async function startEverythingHttp({ command = process.execPath, prefix = [] } = {}) {
  const everything = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn(command, [...prefix, everything, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise((resolve) => child.stderr.on('data', (d) => String(d).includes('listening on port') && resolve()));
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

/** p-th percentile (0..100), linear interpolation. */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  const i = (p / 100) * (s.length - 1);
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return lo === hi ? s[lo] : s[lo] + (s[hi] - s[lo]) * (i - lo);
}
/**
 * The independent gateway benchmark's figure (bench/gatewayOverhead.mjs, bench/mcpGateway.mjs): from
 * interleaved rounds of sequential calls (each round an array of ms), the median of the per-round
 * (gateway median − direct median), its IQR, and both arms' medians of round medians.
 */
export function verdict(directRounds, gatewayRounds) {
  const dm = directRounds.map((r) => percentile(r, 50));
  const gm = gatewayRounds.map((r) => percentile(r, 50));
  const deltas = gm.map((g, i) => g - dm[i]);
  return {
    direct: percentile(dm, 50),
    gateway: percentile(gm, 50),
    overhead: percentile(deltas, 50),
    iqr: [percentile(deltas, 25), percentile(deltas, 75)],
  };
}
