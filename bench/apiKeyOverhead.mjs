// API key overhead (issue 22): each transport scenario with an `aib_…` API key on every request,
// as a ratio to the same scenario with a valid HS256 JWT (the baseline credential), on the same
// server in the same run. The key has no limits and no budget, so the difference is recognising
// the key (checksum, server tag, HMAC compare, the ≤ 1 s record cache) against a cached JWT
// verification. Runs alternate A B B A; the server's CPU per request is reported beside req/s.
// Usage: node bench/apiKeyOverhead.mjs [seconds]
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { abbaRun, authScenarios, mcpSession } from './authOverhead.mjs';
import { startServer } from './lib.mjs';

const SECRET = 'bench-jwt-secret-0123456789-abcdefghijkl';
const mean = (a, b, key) => (a[key] + b[key]) / 2;

export async function apiKeyOverhead(duration) {
  const here = (p) => fileURLToPath(new URL(p, import.meta.url));
  const config = { storage: { type: 'memory' }, jwt: { secret: SECRET }, mcp: { auth: { authType: 'jwt', publicTools: ['greeting', 'echo'] } } };
  const app = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  const jwt = await mintDevToken({ secret: SECRET, sub: 'bench-user', scopes: ['mcp'] });
  const created = await fetch(app.url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${jwt}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'keys.create', params: { name: 'bench' } }),
  }).then((r) => r.json());
  if (!created.result) throw new Error(`keys.create failed: ${JSON.stringify(created)}`);
  const auth = { jwt: { authorization: `Bearer ${jwt}` }, key: { authorization: `Bearer ${created.result.key}` } };
  const sessions = { jwt: await mcpSession(app.url, auth.jwt), key: await mcpSession(app.url, auth.key) };
  const scenarios = authScenarios(app.url, sessions);
  const half = Math.max(1, duration / 2);
  const run = abbaRun(app, half, (variant) => auth[variant]);
  const lines = [
    `\n## API key overhead: an aib_ key on every request vs a valid HS256 JWT (same server, A B B A, ${half}s per run)\n`,
    '| scenario | JWT req/s | API key req/s | key / JWT | server CPU µs/req JWT | key | CPU key / JWT | p99 ms JWT / key | errors |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const s of scenarios) {
      const a1 = await run(s, 'jwt');
      const b1 = await run(s, 'key');
      const b2 = await run(s, 'key');
      const a2 = await run(s, 'jwt');
      const base = mean(a1, a2, 'rps');
      const key = mean(b1, b2, 'rps');
      const cpuBase = mean(a1, a2, 'cpuUs');
      const cpuKey = mean(b1, b2, 'cpuUs');
      lines.push(
        `| ${s.name} | ${Math.round(base)} | ${Math.round(key)} | ${(key / base).toFixed(2)} | ${Math.round(cpuBase)} | ${Math.round(cpuKey)} | ${(cpuKey / cpuBase).toFixed(2)} | ${mean(a1, a2, 'p99')} / ${mean(b1, b2, 'p99')} | ${a1.errors + a2.errors + b1.errors + b2.errors} |`,
      );
    }
  } finally {
    await app.stop();
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await apiKeyOverhead(Number(process.argv[2] ?? 8)));
