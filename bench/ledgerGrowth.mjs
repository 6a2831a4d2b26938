#!/usr/bin/env node
// Growth of the durable stores (issue 37), in ONE run per store: a store filled with `--rows`
// ledger rows spread over `--users` users (and the usage, credit and day rows the same calls write)
// against an empty store of the same kind, both served by a server of the built package at once.
// Every row is written through the project's own code: BillingService.credit, reserve and settle
// (each a real transaction with its invariants: balance row, ledger lines, usage record, day rows),
// `--concurrency` calls in flight in process (default 128), so PostgreSQL's and Redis's group
// commit batches them as it batches a busy instance's calls; nothing else is batched.
// Then, alternating empty/full per sample, the p50 latency of: a metered call (ai.generateText,
// reserve → upstream → settle), balance and history reads, usage analytics, the console's views
// (admin.overview, admin.usageAnalytics, admin.userActivity, admin.userUsage), and the hold
// sweeper (BillingService.sweepExpiredReservations, in process). Target: full / empty <= 1.2.
//
//   node bench/ledgerGrowth.mjs --stores sqlite,postgres --rows 10000000 --users 100000   (by hand: hours)
//   node bench/ledgerGrowth.mjs --stores sqlite,postgres --fill-seconds 300                (what fits)
// --keep <dir>: keep the filled stores; a later run with the same <dir> measures them without filling.
// --vacuum: VACUUM (ANALYZE) the PostgreSQL stores before measuring (what autovacuum does where it is on).
// Options: --rows (target ledger rows, default 10,000,000), --fill-seconds (stop filling after this,
// default unlimited: whichever comes first), --users (default 10,000), --concurrency (default 128, per process),
// --fill-processes (PostgreSQL: fill from this many processes at once, default 1; SQLite always 1),
// --samples per measured call (default 200), --pg postgres URL (default postgres://postgres@127.0.0.1:5432/test),
// --baseline <root of another checkout, built>: after the fill, serve the same two stores from that build's
// servers too (one build at a time: a SQLite file is locked to one process), baseline first, and print its
// table beside this build's (an A/B at the same store and load: compare the CPU per call).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { mintDevToken } from '@ai-backend/auth';
import { BillingService, createLogger, createStorage, KeyVault, resolveConfig } from '@ai-backend/core/internal';
import { startServer } from './lib.mjs';

const args = {};
for (const [i, a] of process.argv.slice(2).entries()) if (a.startsWith('--')) args[a.slice(2)] = process.argv[i + 3];
const STORES = (args.stores ?? 'sqlite,postgres').split(',');
const ROWS = Number(args.rows ?? 10_000_000);
const FILL_S = Number(args['fill-seconds'] ?? Infinity);
const USERS = Number(args.users ?? 10_000);
const CONCURRENCY = Number(args.concurrency ?? 128);
const FILL_WORKERS = Number(args['fill-processes'] ?? 1);
const SAMPLES = Number(args.samples ?? 200);
const PG = args.pg ?? 'postgres://postgres@127.0.0.1:5432/test';
const BASELINE = args.baseline;
const VACUUM = process.argv.includes('--vacuum');
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-ledger-growth-jwt-secret-0123456789';
const VAULT = 'bench-ledger-growth-vault-key-0123456789';
const BILLING = {
  platformFeeRate: 0.1,
  allowAnonymousServerPaid: false,
  anonymousTokensPerWindow: 0,
  anonymousWindowMs: 60_000,
  reservationTtlMs: 900_000,
};
// --keep <dir>: the stores live on (SQLite under <dir>, PostgreSQL in schemas named after it), and
// a later run with the same --keep measures them again without filling (a 10 M fill takes hours).
const KEEP = args.keep;
const tag = KEEP
  ? KEEP.replace(/[^a-z0-9]/gi, '')
      .slice(-24)
      .toLowerCase()
  : `${process.pid}`;
const root = KEEP ?? (await mkdtemp(join(tmpdir(), 'bench-ledger-growth-')));
if (KEEP) await mkdir(KEEP, { recursive: true });
const schemas = [];

function storageConfig(kind, name) {
  if (kind === 'sqlite') return { type: 'sqlite', dir: join(root, name) };
  const schema = `bench_growth_${name}_${tag}`;
  if (!KEEP) schemas.push(schema);
  return { type: 'postgres', postgres: { connectionString: PG, schema, poolSize: 10, queryTimeoutMs: 60_000, connectTimeoutMs: 60_000 } };
}

function billingOn(storage) {
  const logger = createLogger('silent');
  return new BillingService(storage, new KeyVault(storage, { masterKey: VAULT }, logger), BILLING, logger);
}

/**
 * Ledger rows through BillingService: a credit per user (1 row), then calls (reserve + settle: 2
 * rows). `part`: this process's share when several fill the same store (process `index` of `of`
 * credits the users u with u % of === index and makes its calls for users (i * of + index) % USERS).
 */
async function fill(cfg, part = { index: 0, of: 1, rows: ROWS, seconds: FILL_S }) {
  const storage = await createStorage(resolveConfig({ storage: cfg }).storage);
  const billing = billingOn(storage);
  const started = performance.now();
  const deadline = started + part.seconds * 1000;
  let rows = 0;
  let next = 0;
  const user = (u) => ({ sub: `user-${u}`, scopes: [], isAdmin: false, via: 'jwt' });
  const worker = async (w) => {
    for (let u = w * part.of + part.index; u < USERS; u += CONCURRENCY * part.of) {
      await billing.credit({ userId: `user-${u}`, tokens: 1e12, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
      rows++;
    }
    while (rows < part.rows && performance.now() < deadline) {
      const i = next++;
      const u = (i * part.of + part.index) % USERS;
      const r = await billing.reserve({ identity: user(u), tokens: 100, requestId: `fill-${part.index}-${i}` });
      await billing.settle(r, { tokensUsed: 50 + (i % 50), provider: 'openai', model: `gpt-4o-mini` });
      rows += 2;
      if (i % 50_000 === 0)
        process.stderr.write(
          `  ${cfg.type}${part.of > 1 ? ` (process ${part.index + 1} of ${part.of})` : ''}: ${rows.toLocaleString('en')} ledger rows, ` +
            `${((performance.now() - started) / 1000).toFixed(0)} s\n`,
        );
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  await billing.stop();
  await storage.close();
  return { rows, seconds: (performance.now() - started) / 1000 };
}

/**
 * The fill in FILL_WORKERS processes at once against the same store (PostgreSQL: one Node process
 * fills at most one core's worth of calls; the billing code runs unchanged in each). SQLite is
 * filled by one process: its file is locked to the process that opens it.
 */
async function fillInProcesses(kind, cfg) {
  const n = kind === 'sqlite' ? 1 : FILL_WORKERS;
  // In process only when it is the one fill: SQLite's calls never wait for I/O, so a fill in this
  // process would hold its event loop and starve every other store's fill.
  if (n === 1 && STORES.length === 1) return fill(cfg);
  // Migrate once before the processes start (each would otherwise wait for the others' lock).
  await (await createStorage(resolveConfig({ storage: cfg }).storage)).close();
  const started = performance.now();
  const parts = await Promise.all(
    Array.from({ length: n }, (_, index) => {
      const part = { index, of: n, rows: Math.ceil(ROWS / n), seconds: FILL_S };
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--fill-worker', JSON.stringify({ cfg, part })], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      return new Promise((resolve, reject) =>
        child.on('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`fill process ${index} exited ${code}`)),
        ),
      );
    }),
  );
  return { rows: parts.reduce((a, p) => a + p.rows, 0), seconds: (performance.now() - started) / 1000, processes: n };
}

if (args['fill-worker']) {
  const job = JSON.parse(args['fill-worker']);
  const done = await fill(job.cfg, { ...job.part, seconds: job.part.seconds ?? Infinity });
  if (!KEEP) await rm(root, { recursive: true, force: true });
  console.log(JSON.stringify(done));
  process.exit(0);
}

/**
 * The sweeper on both stores: `n` sweeps each, alternating empty/full as the calls are (nothing
 * due: what every instance pays each interval; a sweep is a tenth of a millisecond, so the
 * alternation keeps the machine's noise out of the ratio).
 */
async function sweeps(full, empty, n) {
  const open = async (cfg) => {
    const storage = await createStorage(resolveConfig({ storage: cfg }).storage);
    return { storage, billing: billingOn(storage), times: [] };
  };
  const stores = { empty: await open(empty), full: await open(full) };
  // Each pair in turn order (empty first, then full first): the second of two back-to-back
  // round trips is not served like the first.
  for (let i = 0; i < n; i++)
    for (const s of i % 2 ? [stores.full, stores.empty] : [stores.empty, stores.full]) {
      const t = performance.now();
      await s.billing.sweepExpiredReservations();
      s.times.push(performance.now() - t);
    }
  for (const s of Object.values(stores)) {
    await s.billing.stop();
    await s.storage.close();
  }
  return { full: stores.full.times, empty: stores.empty.times };
}

/** `fn` with a client of its own on the bench's PostgreSQL, ended after it. */
async function withPg(fn) {
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function dropStore(kind, cfg) {
  if (kind === 'sqlite') return rm(cfg.dir, { recursive: true, force: true });
  await withPg((client) => client.query(`DROP SCHEMA IF EXISTS ${cfg.postgres.schema} CASCADE`));
}

async function dbSize(kind, cfg) {
  if (kind === 'sqlite') return (await stat(join(cfg.dir, 'ai-backend.db'))).size / 1048576;
  const { rows } = await withPg((client) =>
    client.query(
      `SELECT sum(pg_total_relation_size(c.oid))::bigint AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [cfg.postgres.schema],
    ),
  );
  return Number(rows[0].b) / 1048576;
}

/** User + system CPU of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
const cpuMs = async (pid) => {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const loadAverage = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
const loadAtStart = await loadAverage();
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
const results = [];

/**
 * Every store is filled at once, each from its own processes (SQLite from one), so
 * the fill uses every core; each is measured afterwards, alone. With --keep, a store filled by an
 * earlier run (its record in <dir>/filled-<kind>.json) is measured as it is.
 */
const fills = Object.fromEntries(
  await Promise.all(
    STORES.map(async (kind) => {
      const record = join(root, `filled-${kind}.json`);
      if (KEEP) {
        const earlier = await readFile(record, 'utf8').then(JSON.parse, () => undefined);
        if (earlier) {
          process.stderr.write(`${kind}: filled by an earlier run (${earlier.rows.toLocaleString('en')} ledger rows)\n`);
          return [kind, earlier];
        }
      }
      process.stderr.write(`${kind}: filling\n`);
      const filled = await fillInProcesses(kind, storageConfig(kind, 'full'));
      if (KEEP) await writeFile(record, JSON.stringify(filled));
      return [kind, filled];
    }),
  ),
);

for (const kind of STORES) {
  const full = storageConfig(kind, 'full');
  const empty = storageConfig(kind, 'empty');
  const filled = fills[kind];
  // The empty store: the same start (a credit for the measured user), nothing else (with --keep,
  // made afresh: an earlier run's measured calls are in it).
  if (KEEP) await dropStore(kind, empty);
  {
    const storage = await createStorage(resolveConfig({ storage: empty }).storage);
    const billing = billingOn(storage);
    await billing.credit({ userId: 'user-0', tokens: 1e12, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
    await billing.stop();
    await storage.close();
  }
  // --vacuum: VACUUM (ANALYZE) both PostgreSQL stores first, what autovacuum does on a server
  // where it is on (it is off on this machine's PostgreSQL: a 1-hour fill leaves every dead row of
  // the settled holds and no statistics).
  if (VACUUM && kind === 'postgres') {
    const started = performance.now();
    await withPg(async (client) => {
      for (const cfg of [full, empty])
        for (const t of ['kv', 'logs', 'log_heads']) await client.query(`VACUUM (ANALYZE) ${cfg.postgres.schema}.${t}`);
    });
    process.stderr.write(`${kind}: VACUUM (ANALYZE) took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  }
  const sizeMb = await dbSize(kind, full);
  const sweep = await sweeps(full, empty, 400);

  const serverConfig = (storage) => ({
    storage,
    mcp: { auth: { authType: 'jwt' } },
    jwt: { secret: SECRET },
    admin: { users: ['bench-admin'] },
    billing: { vaultKey: VAULT, platformFeeRate: 0.1 },
    serverProviders: ['openai'],
    ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench' } } },
    statistics: { enabled: true },
  });
  /** Every measured call on this build's servers (`root`: another checkout's, for --baseline). */
  const measure = async (root) => {
    const script = root ? join(root, 'bench/servers/ai-backend.mjs') : here('./servers/ai-backend.mjs');
    const servers = {
      full: await startServer(script, [JSON.stringify(serverConfig(full))]),
      empty: await startServer(script, [JSON.stringify(serverConfig(empty))]),
    };
    const user = `Bearer ${await mintDevToken({ secret: SECRET, sub: 'user-0', expiresIn: '2h' })}`;
    const admin = `Bearer ${await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' })}`;
    const rpc = async (url, auth, method, params) => {
      const started = performance.now();
      const send = () =>
        fetch(url + '/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: auth },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        });
      // A kept-alive socket the server closed while idle (a slow call on the other server took
      // longer than its keep-alive timeout, on a loaded machine) fails at once: send again.
      const res = await send().catch(send);
      const body = await res.json();
      if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error).slice(0, 300)}`);
      return performance.now() - started;
    };
    const measured = [
      [
        'ai.generateText (metered call)',
        user,
        { content: 'hello', systemPrompt: 'be brief', provider: 'openai', options: { maxTokens: 16 } },
      ],
      ['billing.getTokenBalance', user, undefined],
      ['billing.getUsageHistory', user, { limit: 20 }],
      ['billing.getPurchaseHistory', user, { limit: 20 }],
      ['billing.getConsumptionHistory', user, { limit: 20 }],
      ['billing.getUsageAnalytics', user, { days: 30 }],
      ['admin.overview', admin, { days: 14 }],
      ['admin.usageAnalytics', admin, {}],
      ['admin.userActivity', admin, { userId: 'user-0', kind: 'usage', limit: 20 }],
      ['admin.userUsage', admin, { userId: 'user-0', days: 30 }],
    ];
    const rows = [];
    for (const [label, auth, params] of measured) {
      const method = label.split(' ')[0];
      // Warm both (lazy modules, caches), then alternate so machine noise hits both alike.
      for (let i = 0; i < 10; i++) for (const s of Object.values(servers)) await rpc(s.url, auth, method, params);
      const t = { full: [], empty: [] };
      const cpu0 = { full: await cpuMs(servers.full.pid), empty: await cpuMs(servers.empty.pid) };
      for (let i = 0; i < SAMPLES; i++) {
        t.empty.push(await rpc(servers.empty.url, auth, method, params));
        t.full.push(await rpc(servers.full.url, auth, method, params));
      }
      // Server CPU per call (user + system of each server process over the samples): what load does not inflate.
      const cpu = {
        full: ((await cpuMs(servers.full.pid)) - cpu0.full) / SAMPLES,
        empty: ((await cpuMs(servers.empty.pid)) - cpu0.empty) / SAMPLES,
      };
      rows.push({ label, full: p50(t.full), empty: p50(t.empty), cpu });
    }
    for (const s of Object.values(servers)) await s.stop();
    return rows;
  };
  const baselineRows = BASELINE ? await measure(BASELINE) : undefined;
  const rows = await measure();
  rows.push({ label: 'sweeper (sweepExpiredReservations, in process, 400 each)', full: p50(sweep.full), empty: p50(sweep.empty) });
  results.push({ kind, filled, sizeMb, rows, baselineRows });
}
await upstream.stop();
if (!KEEP) await rm(root, { recursive: true, force: true });
if (schemas.length) {
  await withPg(async (client) => {
    for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  });
}

const f = (n) => n.toFixed(2);
for (const r of results) {
  console.log(
    `\n### ${r.kind}: ${r.filled.rows.toLocaleString('en')} ledger rows over ${USERS.toLocaleString('en')} users vs an empty store (node ${process.version})\n`,
  );
  console.log(
    `filled in ${r.filled.seconds.toFixed(0)} s through BillingService (${Math.round(r.filled.rows / r.filled.seconds).toLocaleString('en')} ledger rows/s, ${CONCURRENCY} calls in flight${r.filled.processes ? ` in each of ${r.filled.processes} processes` : ''}); store ${r.sizeMb.toFixed(0)} MiB\n`,
  );
  const table = (rows) => {
    console.log(
      `| measured (p50 of ${SAMPLES}, alternating) | empty ms | full ms | full / empty | server CPU ms/call empty | full | full / empty |`,
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const x of rows)
      console.log(
        `| ${x.label} | ${f(x.empty)} | ${f(x.full)} | ${(x.full / x.empty).toFixed(2)} | ` +
          (x.cpu ? `${f(x.cpu.empty)} | ${f(x.cpu.full)} | ${(x.cpu.full / x.cpu.empty).toFixed(2)} |` : '– | – | – |'),
      );
  };
  if (r.baselineRows) {
    console.log(`baseline (${BASELINE}), measured first on the same stores:\n`);
    table(r.baselineRows);
    console.log('\nthis build:\n');
  }
  table(r.rows);
}
console.log(`\nload average at the start: ${loadAtStart}; at the end: ${await loadAverage()}`);
