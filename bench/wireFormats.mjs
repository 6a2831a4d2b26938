// Gateway CPU per call of the three wire formats in ONE run: POST /v1/chat/completions (the
// baseline), POST /v1/messages (Anthropic) and POST /v1/responses (OpenAI Responses), each the
// same platform-metered call to the same upstream model (memory store, JWT user with credits),
// non-streaming and `stream: true`. CPU is read from /proc/<pid>/stat of the gateway process, so
// it does not depend on the machine's other load; rounds interleave the endpoints so drift hits
// all of them alike. Usage (after `pnpm build`):
//   node bench/wireFormats.mjs [rounds=6] [requests per round and endpoint=400] [connections=10]
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { mintDevToken } from '@ai-backend/auth';
import { startServer } from './lib.mjs';

const rounds = Number(process.argv[2] ?? 6);
const amount = Number(process.argv[3] ?? 400);
const connections = Number(process.argv[4] ?? 10);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-ai-jwt-secret-0123456789abcdef0123';
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
children.push(upstream.child);
const config = {
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'jwt' } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
};
const gw = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
children.push(gw.child);
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
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

const SYSTEM = 'You are terse.';
const TEXT = 'Summarise the benchmark in one line.';
const MODEL = 'openai/gpt-5-mini';
const bodies = {
  'chat/completions': (stream) => ({
    model: MODEL,
    max_tokens: 64,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: TEXT },
    ],
  }),
  messages: (stream) => ({ model: MODEL, max_tokens: 64, stream, system: SYSTEM, messages: [{ role: 'user', content: TEXT }] }),
  responses: (stream) => ({ model: MODEL, max_output_tokens: 64, stream, instructions: SYSTEM, input: TEXT }),
};
// Every answer must be a metered success in its own format.
const ok = { 'chat/completions': '"token_usage"', messages: '"token_usage"', responses: '"token_usage"' };
const cpu = async (pid) => {
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const run = (path, stream, n) =>
  autocannon({
    url: `${gw.url}/v1/${path}`,
    method: 'POST',
    connections,
    amount: n,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
    body: JSON.stringify(bodies[path](stream)),
    verifyBody: (b) => b.includes(ok[path]),
  });

const cases = Object.keys(bodies).flatMap((path) =>
  [false, true].map((stream) => ({ path, stream, key: `${path}${stream ? ' stream' : ''}` })),
);
for (const c of cases) await run(c.path, c.stream, 300); // warm-up
const tot = Object.fromEntries(cases.map((c) => [c.key, { n: 0, cpu: 0, bad: 0 }]));
for (let r = 0; r < rounds; r++) {
  for (const c of r % 2 ? [...cases].reverse() : cases) {
    const c0 = await cpu(gw.child.pid);
    const a = await run(c.path, c.stream, amount);
    const c1 = await cpu(gw.child.pid);
    const t = tot[c.key];
    t.n += a.requests.total;
    t.cpu += c1 - c0;
    t.bad += a.non2xx + a.errors + a.timeouts + a.mismatches;
  }
}
const us = (t) => (t.cpu * 1e6) / t.n;
console.log('| endpoint | requests | gateway CPU µs/call | ratio to /v1/chat/completions | failed |');
console.log('|---|---|---|---|---|');
for (const c of cases) {
  const base = tot[c.stream ? 'chat/completions stream' : 'chat/completions'];
  const t = tot[c.key];
  console.log(`| POST /v1/${c.key} | ${t.n} | ${Math.round(us(t))} | ${(us(t) / us(base)).toFixed(3)} | ${t.bad} |`);
}
process.exit(0);
