#!/usr/bin/env node
// Time a /v1 call spends in its store, two builds in one run (issue 41): per build one server on a
// SQLite file of its own (AB_STORE=memory for the memory store), the pass-through fast path on,
// sequential calls on one keep-alive connection, BYOK and metered blocks in turn, the builds
// alternating A B / B A. The figure is the server's own storage latency histogram
// (`ai_backend_storage_operation_duration_seconds` of /metrics, every operation): its sum and count
// over a block, per call. Unlike CPU or wall time it leaves out everything but the store, so
// two builds that differ only there are compared on what differs.
//
//   node bench/v1StoreTimeAB.mjs <dirA> <dirB> [rounds=3] [calls per block=2000]
// Each dir is a built checkout (`git worktree add /tmp/A <commit>`, then `pnpm install` there: `prepare` builds).
import { createRequire } from 'node:module';
import path from 'node:path';
import { creditTokens, startServer, v1ServerConfig } from './lib.mjs';

const [dirA, dirB, rounds = '3', perBlock = '2000'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node bench/v1StoreTimeAB.mjs <dirA> <dirB> [rounds] [calls per block]');
const req = createRequire(path.resolve(dirA, 'bench/lib.mjs'));
const { mintDevToken } = await import(req.resolve('@ai-backend/auth'));
// undici is the core package's own dependency (its upstream client).
const undici = createRequire(req.resolve('@ai-backend/core'))('undici');
const store = process.env.AB_STORE ?? 'sqlite';

const SECRET = 'bench-v1-store-time-ab-jwt-secret-0123456789';
const upstream = await startServer(path.resolve(dirA, 'bench/servers/canned-openai.mjs'));
const children = [upstream.child];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });

const servers = {};
for (const [name, dir] of [
  ['A', dirA],
  ['B', dirB],
]) {
  const s = await startServer(path.resolve(dir, 'bench/servers/ai-backend.mjs'), [
    JSON.stringify(v1ServerConfig(upstream.url, SECRET, store)),
  ]);
  children.push(s.child);
  await creditTokens(s.url, admin);
  servers[name] = { ...s, pool: new undici.Pool(s.url, { connections: 1 }) };
}

const body = JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'Say ok.' }] });
const kinds = { BYOK: { 'x-provider-api-key': 'sk-bench-byok' }, metered: {} };

async function call(s, kind) {
  const r = await s.pool.request({
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, ...kinds[kind] },
    body,
  });
  const text = await r.body.text();
  if (r.statusCode !== 200 || r.headers['x-ai-backend-path'] !== 'pass-through')
    throw new Error(`${kind}: ${r.statusCode} ${text.slice(0, 200)}`);
}

/** The storage histogram's sum (seconds) and count, over every operation. */
async function storeTotals(s) {
  const r = await s.pool.request({ path: '/metrics', method: 'GET', headers: { authorization: `Bearer ${admin}` } });
  let sum = 0;
  let count = 0;
  for (const line of (await r.body.text()).split('\n')) {
    const value = Number(line.split(' ').at(-1));
    if (line.startsWith('ai_backend_storage_operation_duration_seconds_sum')) sum += value;
    else if (line.startsWith('ai_backend_storage_operation_duration_seconds_count')) count += value;
  }
  return { sum, count };
}

for (const s of Object.values(servers)) for (const kind of Object.keys(kinds)) for (let i = 0; i < 500; i++) await call(s, kind);

const totals = {};
for (let round = 0; round < Number(rounds); round++)
  for (const kind of Object.keys(kinds))
    for (const name of round % 2 ? ['B', 'A'] : ['A', 'B']) {
      const s = servers[name];
      const before = await storeTotals(s);
      for (let i = 0; i < Number(perBlock); i++) await call(s, kind);
      const after = await storeTotals(s);
      const t = (totals[`${kind}|${name}`] ??= { us: [], ops: 0, calls: 0 });
      t.us.push(((after.sum - before.sum) * 1e6) / Number(perBlock));
      t.ops += after.count - before.count;
      t.calls += Number(perBlock);
    }

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const lines = [
  `## /v1 store time per call, two builds (${store}; ${rounds} rounds x ${perBlock} sequential calls; node ${process.version})`,
  '',
  `A: ${dirA}  B: ${dirB}`,
  '',
  '| call | A µs in the store (median of rounds) | B | B / A | A operations / call | B |',
  '|---|---|---|---|---|---|',
];
for (const kind of Object.keys(kinds)) {
  const a = totals[`${kind}|A`];
  const b = totals[`${kind}|B`];
  lines.push(
    `| ${kind} | ${median(a.us).toFixed(0)} | ${median(b.us).toFixed(0)} | ${(median(b.us) / median(a.us)).toFixed(2)} | ${(a.ops / a.calls).toFixed(2)} | ${(b.ops / b.calls).toFixed(2)} |`,
  );
}
console.log(lines.join('\n'));
for (const s of Object.values(servers)) {
  await s.pool.close();
  await s.stop();
}
await upstream.stop();
