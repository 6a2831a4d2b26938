// The /v1 pass-through path against the AI SDK path, in ONE run (docs/performance.md, "Pass-through
// against the AI SDK path"): two gateways of the same build on the same test upstream, one with
// `ai.passThrough: true` (the default) and one with `false`, the same platform-metered calls
// (memory store, JWT user with credits): POST /v1/chat/completions to openai and POST /v1/messages
// to anthropic, each plain and `stream: true`. Per case and gateway: gateway CPU per call (from
// /proc/<pid>/stat, independent of the machine's other load, at `connections` concurrent
// requests) and the p50 / p99 of sequential calls (one at a time, client-side hrtime). Rounds
// alternate the order (A B, B A) so drift hits both alike. Usage (after `pnpm build`):
//   node bench/passThroughAB.mjs [rounds=4] [requests per round and case=400] [connections=10] [sequential per round=200]
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { mintDevToken } from '@ai-backend/auth';
import { cpuSeconds, loadAverage, startServer } from './lib.mjs';

const rounds = Number(process.argv[2] ?? 4);
const amount = Number(process.argv[3] ?? 400);
const connections = Number(process.argv[4] ?? 10);
const sequential = Number(process.argv[5] ?? 200);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-ai-jwt-secret-0123456789abcdef0123';
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
children.push(upstream.child);
const gateway = async (passThrough) => {
  const config = {
    storage: { type: 'memory' },
    mcp: { auth: { authType: 'jwt' } },
    jwt: { secret: SECRET },
    serverProviders: ['openai', 'anthropic'],
    ai: {
      passThrough,
      providers: {
        openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench-server-key' },
        anthropic: { baseUrl: upstream.baseUrls.anthropic, apiKey: 'sk-bench-server-key' },
      },
    },
  };
  const gw = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  children.push(gw.child);
  const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });
  await fetch(gw.url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'billing.creditTokens',
      params: { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'c' },
    }),
  });
  return gw;
};
const gws = { 'pass-through': await gateway(true), sdk: await gateway(false) };
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });

const TEXT = 'Summarise the benchmark in one line.';
const bodies = {
  'chat/completions': (stream) => ({ model: 'openai/gpt-5-mini', max_tokens: 64, stream, messages: [{ role: 'user', content: TEXT }] }),
  messages: (stream) => ({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: TEXT }] }),
};
const headers = { 'content-type': 'application/json', authorization: `Bearer ${user}` };
const cases = Object.keys(bodies).flatMap((path) =>
  [false, true].map((stream) => ({ path, stream, key: `${path}${stream ? ' stream' : ''}` })),
);

// Every answer must be a success, on the path it claims: the pass-through gateway's carry its header.
for (const [name, gw] of Object.entries(gws))
  for (const c of cases) {
    const res = await fetch(`${gw.url}/v1/${c.path}`, { method: 'POST', headers, body: JSON.stringify(bodies[c.path](c.stream)) });
    await res.text();
    const path = res.headers.get('x-ai-backend-path') ?? 'sdk';
    if (res.status !== 200 || path !== name) throw new Error(`${name} ${c.key}: status ${res.status}, path ${path}`);
  }

const load = (gw, c, n) =>
  autocannon({
    url: `${gw.url}/v1/${c.path}`,
    method: 'POST',
    connections,
    amount: n,
    headers,
    body: JSON.stringify(bodies[c.path](c.stream)),
  });
async function oneByOne(gw, c, n) {
  const body = JSON.stringify(bodies[c.path](c.stream));
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${gw.url}/v1/${c.path}`, { method: 'POST', headers, body });
    await res.arrayBuffer();
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return ms;
}
for (const gw of Object.values(gws)) for (const c of cases) await load(gw, c, Math.max(100, amount)); // warm-up

const tot = {};
for (const name of Object.keys(gws)) for (const c of cases) tot[`${name} ${c.key}`] = { n: 0, cpu: 0, bad: 0, ms: [] };
const loadBefore = await loadAverage();
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? ['sdk', 'pass-through'] : ['pass-through', 'sdk'];
  for (const c of cases)
    for (const name of order) {
      const gw = gws[name];
      const t = tot[`${name} ${c.key}`];
      const c0 = await cpuSeconds(gw.child.pid);
      const a = await load(gw, c, amount);
      t.cpu += (await cpuSeconds(gw.child.pid)) - c0;
      t.n += a.requests.total;
      t.bad += a.non2xx + a.errors + a.timeouts;
      t.ms.push(...(await oneByOne(gw, c, sequential)));
    }
}
const pct = (ms, p) => [...ms].sort((a, b) => a - b)[Math.floor((ms.length - 1) * p)];
const us = (t) => (t.cpu * 1e6) / t.n;
console.log(`load average ${loadBefore} → ${await loadAverage()}`);
console.log('| case | path | gateway CPU µs/call | CPU / SDK path | p50 ms | p99 ms | p50 / SDK path | failed |');
console.log('|---|---|---|---|---|---|---|---|');
for (const c of cases)
  for (const name of Object.keys(gws)) {
    const t = tot[`${name} ${c.key}`];
    const base = tot[`sdk ${c.key}`];
    console.log(
      `| POST /v1/${c.key} | ${name} | ${Math.round(us(t))} | ${(us(t) / us(base)).toFixed(2)} | ${pct(t.ms, 0.5).toFixed(2)} | ${pct(t.ms, 0.99).toFixed(2)} | ${(pct(t.ms, 0.5) / pct(base.ms, 0.5)).toFixed(2)} | ${t.bad} |`,
    );
  }
process.exit(0);
