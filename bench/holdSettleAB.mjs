// A metered call's two store requests alone (the hold, with the payer decision read in it, and the
// settle), one call at a time, for two builds side by side: what each costs the client (CPU per
// call), the store server (PostgreSQL backend CPU per request, from /proc/<pid>/schedstat of the
// backends of this build's pool, found by its sockets' ports; Redis: redis-server's) and the
// caller (wall time per request, p50). Each build runs in its own process; rounds alternate
// A B B A, so on a shared machine whose load swings both builds see the same machine and their
// ratio holds. Redis's server CPU counts every client of that redis-server: read it idle only.
// Usage (both checkouts built; PostgreSQL on 127.0.0.1:5432 database `test`, Redis on 6379):
//   node bench/holdSettleAB.mjs <checkoutA> <checkoutB> [rounds=6] [callsPerRound=400] [warm=1500]
// STORES=postgres,redis picks the stores (default both). PGUSER as for the other benches.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const pgConn = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'root', database: 'test' };

/** Sum of run time (ns) of the given pids, from /proc/<pid>/schedstat (0 for a pid that is gone). */
function runNs(pids) {
  let ns = 0;
  for (const pid of pids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {}
  }
  return ns;
}

/** Local ports of this process's TCP connections to `remotePort` (its pool's sockets to PostgreSQL). */
function ownPorts(remotePort) {
  const inodes = new Set();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {}
  }
  const ports = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9])) continue;
      if (Number.parseInt(f[2].split(':')[1], 16) === remotePort) ports.push(Number.parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
};

if (process.env.HOLD_SETTLE_CHILD) {
  // One build, one store: load it, credit a user, then answer the parent's rounds.
  const root = process.env.HOLD_SETTLE_CHILD;
  const store = process.env.HOLD_SETTLE_STORE;
  const tag = process.env.HOLD_SETTLE_TAG;
  const main = await import(pathToFileURL(`${root}/packages/core/dist/index.js`).href);
  const core = main.createRuntime ? main : await import(pathToFileURL(`${root}/packages/core/dist/internal.js`).href);
  const { resolveConfig } = await import(pathToFileURL(`${root}/packages/core/dist/config/index.js`).href);
  const storage =
    store === 'postgres'
      ? { type: 'postgres', postgres: { ...pgConn, schema: tag } }
      : { type: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix: `${tag}:` } };
  const rt = await core.createRuntime(
    resolveConfig({ storage, monitoring: { logging: { level: 'error' } }, metrics: { enabled: false }, statistics: { enabled: false } }),
  );
  await rt.billing.credit({ userId: 'hs-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'hs-credit', source: 'admin' });
  const identity = { sub: 'hs-user', scopes: [] };
  let seq = 0;
  // The store server's processes serving this build: its PostgreSQL backends, or redis-server.
  let serverPids = [];
  const findServer = async () => {
    if (store === 'postgres') {
      const pg = (await import('pg')).default;
      const c = new pg.Client(pgConn);
      await c.connect();
      const r = await c.query('SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])', [ownPorts(5432)]);
      await c.end();
      serverPids = r.rows.map((x) => x.pid);
    } else {
      const { execFileSync } = await import('node:child_process');
      serverPids = execFileSync('pgrep', ['-x', 'redis-server'], { encoding: 'utf8' }).trim().split('\n').map(Number);
    }
  };
  const oneCall = async (times) => {
    const requestId = `hs-${process.pid}-${seq++}`;
    const s0 = runNs(serverPids);
    const t0 = performance.now();
    const hold = await rt.billing.hold({
      identity,
      requestId,
      provider: 'openai',
      estimatedTokens: 100,
      byokAllowed: true,
      serverPays: true,
    });
    const t1 = performance.now();
    const s1 = runNs(serverPids);
    await hold.settle({ tokensUsed: 80, provider: 'openai', model: 'gpt-5-mini' });
    const t2 = performance.now();
    const s2 = runNs(serverPids);
    if (times) {
      times.hold.push(t1 - t0);
      times.settle.push(t2 - t1);
      times.sHold.push((s1 - s0) / 1000);
      times.sSettle.push((s2 - s1) / 1000);
    }
  };
  process.on('message', async (m) => {
    if (m.cmd === 'warm') {
      for (let i = 0; i < m.calls; i++) await oneCall();
      await findServer();
      process.send({ ok: true, pids: serverPids.length });
    } else if (m.cmd === 'round') {
      const times = { hold: [], settle: [], sHold: [], sSettle: [] };
      const c0 = process.cpuUsage();
      for (let i = 0; i < m.calls; i++) await oneCall(times);
      const c = process.cpuUsage(c0);
      process.send({
        cpu: (c.user + c.system) / m.calls,
        hold: median(times.hold),
        settle: median(times.settle),
        sHold: median(times.sHold),
        sSettle: median(times.sSettle),
      });
    } else if (m.cmd === 'close') {
      await rt.close();
      if (store === 'postgres') {
        const pg = (await import('pg')).default;
        const c = new pg.Client(pgConn);
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
        await c.end();
      } else {
        const { Redis } = await import('ioredis');
        const r = new Redis({ host: '127.0.0.1', port: 6379 });
        const keys = await r.keys(`${tag}:*`);
        if (keys.length) await r.del(...keys);
        await r.quit();
      }
      process.send({ ok: true });
      process.exit(0);
    }
  });
  process.send({ ready: true });
} else {
  const [rootA, rootB] = process.argv.slice(2, 4).map((p) => resolve(p));
  if (!rootA || !rootB) throw new Error('usage: node bench/holdSettleAB.mjs <checkoutA> <checkoutB> [rounds] [calls] [warm]');
  const rounds = Number(process.argv[4] ?? 6);
  const calls = Number(process.argv[5] ?? 400);
  const warm = Number(process.argv[6] ?? 1500);
  const stores = (process.env.STORES ?? 'postgres,redis').split(',');
  const self = fileURLToPath(import.meta.url);

  const start = (root, label, store) =>
    new Promise((ok) => {
      const tag = `bench_hs_${process.pid}_${label}`;
      const child = fork(self, [], {
        env: { ...process.env, HOLD_SETTLE_CHILD: root, HOLD_SETTLE_STORE: store, HOLD_SETTLE_TAG: tag },
        cwd: root,
      });
      const ask = (msg) =>
        new Promise((done) => {
          child.once('message', done);
          child.send(msg);
        });
      child.once('message', () => ok({ label, ask }));
    });

  const rows = [];
  for (const store of stores) {
    const A = await start(rootA, 'a', store);
    const B = await start(rootB, 'b', store);
    await A.ask({ cmd: 'warm', calls: warm });
    await B.ask({ cmd: 'warm', calls: warm });
    const acc = { a: [], b: [] };
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 ? [B, A] : [A, B]) acc[side.label].push(await side.ask({ cmd: 'round', calls }));
    }
    await A.ask({ cmd: 'close' });
    await B.ask({ cmd: 'close' });
    for (const l of ['a', 'b']) {
      const m = (k) => median(acc[l].map((x) => x[k]));
      rows.push({ store, build: l, cpu: m('cpu'), hold: m('hold'), settle: m('settle'), sHold: m('sHold'), sSettle: m('sSettle') });
    }
  }
  console.log(`\n### A metered call's hold and settle, one at a time, ${rounds} rounds x ${calls} calls after ${warm}, A B B A\n`);
  console.log(`A = ${rootA}, B = ${rootB}\n`);
  console.log('| store | build | client CPU µs/call | hold ms p50 | settle ms p50 | server CPU µs: hold | settle |');
  console.log('|---|---|---|---|---|---|---|');
  const f = (n, d = 0) => n.toFixed(d);
  for (const x of rows) {
    console.log(`| ${x.store} | ${x.build} | ${f(x.cpu)} | ${f(x.hold, 3)} | ${f(x.settle, 3)} | ${f(x.sHold)} | ${f(x.sSettle)} |`);
  }
  console.log(`\nload average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
}
