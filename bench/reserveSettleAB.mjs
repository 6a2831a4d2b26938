#!/usr/bin/env node
// CPU and instructions per reserve + settle through BillingService, in process, the way
// bench/ledgerGrowth.mjs fills a store (issue 37): `--users` users credited once, then
// `reserve` + `settle` with `--concurrency` calls in flight; MODE=hold drives `hold` and the
// Hold's settle instead (a metered /v1 call's billing: the payer decision in the hold's
// transaction). Two built checkouts, each in its own worker process, rounds alternating A B B A
// so both see the same machine: CPU per call from the worker's process.cpuUsage (user and
// system apart; system is mostly SQLite's WAL writes) and calls per second. With `--callgrind`,
// each worker instead runs once under valgrind's callgrind, all at once, with counting switched
// on only for the counted calls (after the warm-up): instructions per call, steady on a loaded machine.
//
//   node bench/reserveSettleAB.mjs <checkoutA> <checkoutB> [--stores memory,sqlite] [--users 1000]
//        [--concurrency 128] [--warm 2000] [--calls 4000] [--rounds 4] [--callgrind]
// SQLite runs on the default driver (better-sqlite3 on Node 20); SQLITE_DRIVER=node-sqlite picks the other.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { billOneCall, creditedBilling } from './lib.mjs';

const argv = process.argv.slice(2);
if (argv[0] === '--worker') await worker(JSON.parse(argv[1]));
else await main();

async function main() {
  const roots = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--')).slice(0, 2);
  const opt = (name, dflt) => {
    const i = argv.indexOf(`--${name}`);
    return i === -1 ? dflt : argv[i + 1];
  };
  if (roots.length !== 2) throw new Error('usage: node bench/reserveSettleAB.mjs <checkoutA> <checkoutB> [options]');
  const [A, B] = roots.map((r) => resolve(r));
  const stores = opt('stores', 'memory,sqlite').split(',');
  const grind = argv.includes('--callgrind');
  const job = {
    users: Number(opt('users', 1000)),
    concurrency: Number(opt('concurrency', 128)),
    warm: Number(opt('warm', 2000)),
    calls: Number(opt('calls', grind ? 1000 : 4000)),
    mode: process.env.MODE ?? 'fill',
    grind,
  };
  const rounds = grind ? 1 : Number(opt('rounds', 4));
  const totals = {};
  const record = (store, label, res) => {
    const t = (totals[`${store} ${label}`] ??= { user: 0, sys: 0, rate: 0, instr: 0, wal: 0, n: 0 });
    t.user += res.userUs;
    t.sys += res.sysUs;
    t.rate += res.perSec;
    t.instr += res.instructions ?? 0;
    t.wal += res.walFrames ?? 0;
    t.n++;
    console.error(`${store} ${label}: ${JSON.stringify(res)}`);
  };
  if (grind) {
    // Instruction counts do not depend on the machine's load: every worker runs at once.
    await Promise.all(
      stores.flatMap((store) =>
        [
          ['A', A],
          ['B', B],
        ].map(async ([label, root]) => record(store, label, await runWorker({ ...job, root, store }, true))),
      ),
    );
  } else {
    for (const store of stores) {
      for (let r = 0; r < rounds; r++) {
        for (const [label, root] of r % 2
          ? [
              ['B', B],
              ['A', A],
            ]
          : [
              ['A', A],
              ['B', B],
            ]) {
          record(store, label, await runWorker({ ...job, root, store }, false));
        }
      }
    }
  }
  const f = (x, d = 0) => x.toFixed(d);
  console.log(
    `\n### reserve + settle per call (${job.mode}), ${job.users} users, ${job.concurrency} in flight, ${job.calls} calls after ${job.warm}, ${rounds} round(s)\n`,
  );
  console.log(`A = ${A}\nB = ${B}\n`);
  console.log(
    '| store | A µs CPU (user + sys) | B µs CPU (user + sys) | B / A | A calls/s | B calls/s | A / B WAL frames per call |' +
      (grind ? ' A M instr | B M instr | B / A |' : ''),
  );
  console.log('|---|---|---|---|---|---|---|' + (grind ? '---|---|---|' : ''));
  for (const store of stores) {
    const a = totals[`${store} A`];
    const b = totals[`${store} B`];
    const cpu = (t) => (t.user + t.sys) / t.n;
    console.log(
      `| ${store} | ${f(cpu(a))} (${f(a.user / a.n)} + ${f(a.sys / a.n)}) | ${f(cpu(b))} (${f(b.user / b.n)} + ${f(b.sys / b.n)}) | ${f(cpu(b) / cpu(a), 2)} | ${f(a.rate / a.n)} | ${f(b.rate / b.n)} | ${store === 'sqlite' ? `${f(a.wal / a.n, 1)} / ${f(b.wal / b.n, 1)}` : ''} |` +
        (grind ? ` ${f(a.instr / a.n / 1e6, 3)} | ${f(b.instr / b.n / 1e6, 3)} | ${f(b.instr / a.instr, 2)} |` : ''),
    );
  }
  console.log(`\nload average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
}

/** One worker: set up and warm, then count `calls` (under callgrind: instructions of those calls only). */
async function runWorker(job, grind) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-reserve-settle-'));
  const self = fileURLToPath(import.meta.url);
  const args = [self, '--worker', JSON.stringify({ ...job, dir })];
  const child = grind
    ? spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${dir}/cg.%p`, process.execPath, ...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`worker exited: ${err.slice(-2000)}`);
    return value;
  };
  await next(); // ready (warm)
  if (grind) execFileSync('callgrind_control', ['-i', 'on', String(child.pid)], { stdio: 'ignore' });
  child.stdin.write('go\n');
  const res = JSON.parse(await next());
  if (grind) {
    execFileSync('callgrind_control', ['-i', 'off', String(child.pid)], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
  }
  child.stdin.end();
  await new Promise((r) => child.on('exit', r));
  if (grind) {
    let instructions = 0;
    for (const f of readdirSync(dir).filter((n) => n.startsWith('cg.'))) {
      // A dump's counts since the previous one (the final file, written at exit, holds none of the counted calls).
      const m = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
      if (m) instructions += Number(m[1]);
    }
    res.instructions = instructions / job.calls;
  }
  rmSync(dir, { recursive: true, force: true });
  return res;
}

async function worker(job) {
  const core = await import(pathToFileURL(`${job.root}/packages/core/dist/internal.js`).href);
  const { createStorage, resolveConfig } = core;
  const driver = process.env.SQLITE_DRIVER ? { sqlite: { driver: process.env.SQLITE_DRIVER } } : {};
  // PostgreSQL and Redis where the tests find them (AI_BACKEND_TEST_POSTGRES_URL, AI_BACKEND_TEST_REDIS),
  // in a schema or key prefix of this worker's own, named and dropped by the tests' helpers.
  const networked = job.store === 'postgres' || job.store === 'redis' ? await networkedStore(job.store) : undefined;
  const storage = await createStorage(
    resolveConfig({
      storage: job.store === 'sqlite' ? { type: 'sqlite', dir: job.dir, ...driver } : (networked?.storage ?? { type: job.store }),
    }).storage,
  );
  const billing = await creditedBilling(core, storage, job.users);
  let i = 0;
  const call = (n) => billOneCall(billing, n, job.users, job.mode === 'hold' ? 'hold' : 'reserve');
  const run = (count) => {
    const end = i + count;
    return Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (i < end) await call(i++);
      }),
    );
  };
  await run(job.warm);
  const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  process.stdout.write('ready\n');
  await input.next();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(job.calls);
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  const res = { userUs: cpu.user / job.calls, sysUs: cpu.system / job.calls, perSec: (job.calls / ms) * 1000 };
  if (job.store === 'sqlite' && !job.grind) {
    // The WAL frames a call writes (each a page plus its header, two pwrites), from 500 more calls
    // after the timed ones (which ran with SQLite's automatic checkpoints, part of its cost): with
    // checkpoints off the WAL file only grows, so its growth is the frames written.
    const wal = `${storage.file}-wal`;
    storage.db.exec('PRAGMA wal_checkpoint(TRUNCATE); PRAGMA wal_autocheckpoint = 0');
    await run(500);
    const { page_size: pageSize } = storage.db.prepare('PRAGMA page_size').get();
    // 32 bytes of WAL header, then 24 bytes of header per frame.
    res.walFrames = Math.max(0, statSync(wal).size - 32) / (pageSize + 24) / 500;
  }
  process.stdout.write(`${JSON.stringify(res)}\n`);
  await input.next();
  await billing.stop();
  await storage.close();
  await networked?.drop();
  process.exit(0);
}

/** The storage config of a PostgreSQL or Redis worker, and how to drop what it wrote. */
async function networkedStore(store) {
  const services = await import('@ai-backend/test-utils/services');
  if (store === 'postgres') {
    const at = services.postgresAt();
    const options = services.testPostgresOptions(at, 'reserve_settle');
    return { storage: { type: 'postgres', postgres: options }, drop: () => services.dropTestSchema(at, options.schema) };
  }
  const at = services.hostPort(process.env[services.SERVICE_ENV.redis], { host: '127.0.0.1', port: 6379 });
  const options = services.testRedisOptions(at, 'reserve-settle');
  return { storage: { type: 'redis', redis: options }, drop: () => services.dropTestKeys(at, options.keyPrefix) };
}
