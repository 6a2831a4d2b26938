// Growth of the embedded (SQLite) store, in ONE run: a data directory holding one user with a
// 200,000-entry ledger plus 10,000 small users, against an empty one. Reports start time and
// RSS of a server on each, and the latency of the billing reads for the big user against a small
// user, and a small user's metered call while the big user polls. Usage (after `pnpm build`):
//   node bench/storageGrowth.mjs [bigEntries=200000] [users=10000]
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import * as core from '@ai-backend/core/internal';
import { benchBilling, rssMb, startServer } from './lib.mjs';

const BIG = Number(process.argv[2] ?? 200_000);
const USERS = Number(process.argv[3] ?? 10_000);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-growth-jwt-secret-0123456789abcdef';
const root = await mkdtemp(join(tmpdir(), 'bench-growth-'));
const full = join(root, 'full');
const empty = join(root, 'empty');

// Fill the store through the billing service itself: every entry is a real transaction.
const t0 = performance.now();
{
  const storage = await core.createStorage(core.resolveConfig({ storage: { type: 'sqlite', dir: full } }).storage);
  const billing = benchBilling(core, storage);
  const big = { sub: 'big-user', scopes: [], isAdmin: false, via: 'jwt' };
  await billing.credit({ userId: big.sub, tokens: 1e12, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
  // Each metered call writes 2 ledger entries (reserve, settle); a credit writes 1.
  for (let i = 0; i < (BIG - 1) / 2; i++) {
    const r = await billing.reserve({ identity: big, tokens: 100, requestId: `big-${i}` });
    await billing.settle(r, { tokensUsed: 50 + (i % 50), provider: 'openai', model: 'gpt-4o-mini' });
  }
  for (let u = 0; u < USERS; u++) {
    const id = { sub: `small-${u}`, scopes: [], isAdmin: false, via: 'jwt' };
    await billing.credit({ userId: id.sub, tokens: 100_000, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
    const r = await billing.reserve({ identity: id, tokens: 100, requestId: `small-${u}-0` });
    await billing.settle(r, { tokensUsed: 60, provider: 'openai', model: 'gpt-4o-mini' });
  }
  await storage.close();
}
const fillS = (performance.now() - t0) / 1000;
const dbMb = (await stat(join(full, 'ai-backend.db'))).size / 1048576;

const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
const config = (dir) => ({
  storage: { type: 'sqlite', dir },
  mcp: { auth: { authType: 'jwt' } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench' } } },
});

const token = (sub) => mintDevToken({ secret: SECRET, sub, expiresIn: '2h' });
const rpc = async (url, tok, method, params) => {
  const started = performance.now();
  const res = await fetch(url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tok}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return performance.now() - started;
};
const p50 = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const servers = {};
for (const [name, dir] of [
  ['empty', empty],
  ['full', full],
]) {
  const s = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config(dir))]);
  // Let the first requests load lazily imported modules on both, then read RSS.
  const tok = await token('small-1');
  for (let i = 0; i < 20; i++) await rpc(s.url, tok, 'billing.getTokenBalance');
  servers[name] = { ...s, rss: await rssMb(s.pid) };
}

const { url } = servers.full;
const big = await token('big-user');
const small = await token('small-42');
const reads = [
  ['billing.getTokenBalance', undefined],
  ['billing.getUsageHistory', { limit: 20 }],
  ['billing.getPurchaseHistory', { limit: 20 }],
  ['billing.getConsumptionHistory', { limit: 20 }],
  ['billing.getUsageAnalytics', { days: 30 }],
];
const rows = [];
for (const [method, params] of reads) {
  const times = { big: [], small: [] };
  for (let i = 0; i < 200; i++) {
    times.big.push(await rpc(url, big, method, params));
    times.small.push(await rpc(url, small, method, params));
  }
  rows.push({ method, big: p50(times.big), small: p50(times.small) });
}

const call = (tok) =>
  rpc(url, tok, 'ai.generateText', { content: 'hello', systemPrompt: 'be brief', provider: 'openai', options: { maxTokens: 16 } });
const alone = [];
for (let i = 0; i < 100; i++) alone.push(await call(small));
// The same poll loop by another small user is the control: a tight loop of requests costs the
// server CPU whoever sends it; what must not matter is how long the poller's ledger is.
const small2 = await token('small-4242');
async function whilePolling(poller, calls) {
  let polling = true;
  const loop = (async () => {
    while (polling)
      await Promise.all([
        rpc(url, poller, 'billing.getUsageHistory', { limit: 100 }),
        rpc(url, poller, 'billing.getTokenBalance'),
        rpc(url, poller, 'billing.getUsageAnalytics', { days: 365 }),
      ]);
  })();
  const times = [];
  for (let i = 0; i < calls; i++) times.push(await call(small));
  polling = false;
  await loop;
  return times;
}
const during = [];
const duringControl = [];
for (let round = 0; round < 4; round++) {
  duringControl.push(...(await whilePolling(small2, 50)));
  during.push(...(await whilePolling(big, 50)));
}

for (const s of Object.values(servers)) await s.stop();
await upstream.stop();
await rm(root, { recursive: true, force: true });

const f = (n) => n.toFixed(2);
console.log(
  `\n### SQLite store growth: 1 user with ${BIG.toLocaleString('en')} ledger entries + ${USERS.toLocaleString('en')} users (node ${process.version})\n`,
);
console.log(`filled in ${fillS.toFixed(1)} s through BillingService; database file ${dbMb.toFixed(0)} MiB\n`);
console.log('| server on | start to listening (ms) | RSS after 20 requests (MB) |');
console.log('|---|---|---|');
for (const [name, s] of Object.entries(servers)) console.log(`| ${name} store | ${Math.round(s.startMs)} | ${s.rss} |`);
console.log('\n| procedure (sequential, p50 of 200) | big user ms | small user ms | ratio |');
console.log('|---|---|---|---|');
for (const r of rows) console.log(`| ${r.method} | ${f(r.big)} | ${f(r.small)} | ${(r.big / r.small).toFixed(2)} |`);
console.log(
  `\nsmall user's ai.generateText p50: ${f(p50(alone))} ms alone, ${f(p50(duringControl))} ms while another small user polls (history 100, balance, 365-day analytics) in a loop, ${f(p50(during))} ms while the big user polls the same loop (ratio big/small poller ${(p50(during) / p50(duringControl)).toFixed(2)})`,
);
console.log(
  `load average at the end: ${(await import('node:fs/promises').then((m) => m.readFile('/proc/loadavg', 'utf8'))).split(' ').slice(0, 3).join(' ')}`,
);
