// CPU of a metered call's billing and storage work alone (decide, reserve, settle: what an
// ai.generateText adds over a BYOK call), for two builds side by side in ONE process, on the
// memory, PostgreSQL and Redis stores. Rounds alternate A B B A, so both builds see the same
// machine: on a shared machine whose load swings, the CPU per call moves by several times
// between runs, but the ratio of two builds measured this way holds.
// Usage (both checkouts built; PostgreSQL on 127.0.0.1:5432 database `test`, Redis on 6379):
//   node bench/meteringAB.mjs <checkoutA> <checkoutB> [rounds=6] [callsPerRound=300] [concurrency=10]
// STORES=postgres,redis limits the stores (memory is the reference the last columns divide by);
// STORES=...,postgresX2 adds two instances on one PostgreSQL, one user's calls alternating between them.
// A build whose billing has `hold` (the AI engine's one entry, issue 21) is driven the way its
// engine drives it: hold, then settle on the Hold; an older build through decide, reserve, settle.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';

const [rootA, rootB] = process.argv.slice(2, 4).map((p) => resolve(p));
if (!rootA || !rootB) throw new Error('usage: node bench/meteringAB.mjs <checkoutA> <checkoutB> [rounds] [calls] [concurrency]');
const rounds = Number(process.argv[4] ?? 6);
const calls = Number(process.argv[5] ?? 300);
const concurrency = Number(process.argv[6] ?? 10);
const tag = `bench_ab_${process.pid}`;
const pgConn = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'root', database: 'test' };

const sqliteDir = await mkdtemp(join(tmpdir(), 'bench-ab-'));

async function build(root, label) {
  // createRuntime moved to the internal entry point; older builds export it from the main one.
  const main = await import(pathToFileURL(`${root}/packages/core/dist/index.js`).href);
  const core = main.createRuntime ? main : await import(pathToFileURL(`${root}/packages/core/dist/internal.js`).href);
  const { resolveConfig } = await import(pathToFileURL(`${root}/packages/core/dist/config/index.js`).href);
  const stores = {
    memory: { type: 'memory' },
    sqlite: { type: 'sqlite', dir: join(sqliteDir, label) },
    postgres: { type: 'postgres', postgres: { ...pgConn, schema: `${tag}_${label}` } },
    redis: { type: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix: `${tag}:${label}:` } },
  };
  const runtimes = {};
  for (const [name, storage] of Object.entries(stores).filter(([n]) => !process.env.STORES || process.env.STORES.split(',').includes(n))) {
    const config = resolveConfig({
      storage,
      monitoring: { logging: { level: 'error' } },
      metrics: { enabled: false },
      statistics: { enabled: false },
    });
    const rt = await core.createRuntime(config);
    await rt.billing.credit({ userId: 'ab-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'ab-credit', source: 'admin' });
    runtimes[name] = rt;
  }
  // Two instances on one PostgreSQL (one user's calls alternate between them): each instance's
  // group commits meet the other's writes of the same account row.
  if (process.env.STORES?.split(',').includes('postgresX2')) {
    const config = resolveConfig({
      storage: { type: 'postgres', postgres: { ...pgConn, schema: `${tag}_${label}_2` } },
      monitoring: { logging: { level: 'error' } },
      metrics: { enabled: false },
      statistics: { enabled: false },
    });
    const one = await core.createRuntime(config);
    const two = await core.createRuntime(config);
    await one.billing.credit({ userId: 'ab-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'ab-credit', source: 'admin' });
    let flip = false;
    runtimes.postgresX2 = {
      billing: { hold: (req) => ((flip = !flip) ? one : two).billing.hold(req) },
      close: () => Promise.all([one.close(), two.close()]),
    };
  }
  return { label, runtimes };
}

const identity = { sub: 'ab-user', scopes: [] };
let seq = 0;
/** One metered call's billing: who pays, hold, charge. */
async function meteredCall(billing) {
  const requestId = `ab-${process.pid}-${seq++}`;
  if (billing.hold) {
    const hold = await billing.hold({ identity, requestId, provider: 'openai', estimatedTokens: 100, byokAllowed: true, serverPays: true });
    await hold.settle({ tokensUsed: 80, provider: 'openai', model: 'gpt-5-mini' });
    return;
  }
  const decision = await billing.decide({ identity, provider: 'openai', estimatedTokens: 100, apiKeyProvided: false });
  const reservation = await billing.reserve({ identity, tokens: 100, requestId, decision });
  await billing.settle(reservation, { tokensUsed: 80, provider: 'openai', model: 'gpt-5-mini' });
}

/** Failed calls per store and build (e.g. Redis's CONFLICT under one user's contention): counted, not fatal. */
const failed = {};
async function round(billing, label) {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < calls) {
        await meteredCall(billing).catch((err) => {
          failed[label] = (failed[label] ?? 0) + 1;
          if (failed[label] === 1) console.error(`${label}: ${err.message}`);
        });
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { cpuUs: (cpu.user + cpu.system) / calls, ms: performance.now() - t0 };
}

const A = await build(rootA, 'a');
const B = await build(rootB, 'b');
const totals = {};
try {
  for (const store of Object.keys(A.runtimes)) {
    for (const side of [A, B]) await round(side.runtimes[store].billing, `${store} ${side.label} (warm-up)`);
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 ? [B, A] : [A, B]) {
        const res = await round(side.runtimes[store].billing, `${store} ${side.label}`);
        const t = (totals[`${store} ${side.label}`] ??= { cpu: 0, ms: 0, n: 0 });
        t.cpu += res.cpuUs;
        t.ms += res.ms;
        t.n++;
      }
    }
    console.error(
      `${store}: A ${Math.round(totals[`${store} a`].cpu / rounds)} µs, B ${Math.round(totals[`${store} b`].cpu / rounds)} µs CPU per call`,
    );
  }
} finally {
  for (const side of [A, B]) for (const rt of Object.values(side.runtimes)) await rt.close();
  const db = new pg.Client(pgConn);
  await db.connect();
  for (const l of ['a', 'b', 'a_2', 'b_2']) await db.query(`DROP SCHEMA IF EXISTS "${tag}_${l}" CASCADE`);
  await db.end();
  const redis = new Redis({ host: '127.0.0.1', port: 6379 });
  const keys = await redis.keys(`${tag}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
  await rm(sqliteDir, { recursive: true, force: true });
}

const f = (n) => Math.round(n);
console.log(
  `\n### Billing + storage CPU per metered call (decide, reserve, settle), ${rounds} rounds x ${calls} calls, ${concurrency} at a time, A B B A\n`,
);
console.log(`A = ${rootA}, B = ${rootB}\n`);
console.log('| store | A µs CPU/call | B µs CPU/call | B / A | A calls/s | B calls/s | A / memory A | B / memory B | failed A / B |');
console.log('|---|---|---|---|---|---|---|---|---|');
const per = (k) => totals[k].cpu / totals[k].n;
const rate = (k) => (calls * totals[k].n) / (totals[k].ms / 1000);
for (const store of Object.keys(A.runtimes)) {
  const a = per(`${store} a`);
  const b = per(`${store} b`);
  console.log(
    `| ${store} | ${f(a)} | ${f(b)} | ${(b / a).toFixed(2)} | ${f(rate(`${store} a`))} | ${f(rate(`${store} b`))} | ${totals['memory a'] ? (a / per('memory a')).toFixed(2) : '-'} | ${totals['memory b'] ? (b / per('memory b')).toFixed(2) : '-'} | ${failed[`${store} a`] ?? 0} / ${failed[`${store} b`] ?? 0} |`,
  );
}
console.log(
  `\nload average at the end: ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
process.exit(0);
