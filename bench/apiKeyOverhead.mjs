// API key overhead (issue 22): each transport scenario with an `aib_…` API key on every request,
// as a ratio to the same scenario with a valid HS256 JWT (the baseline credential), on the same
// server in the same run. On the transport scenarios the key has no rules, so the difference is
// recognising the key (checksum, server tag, HMAC compare, the ≤ 1 s record cache) against a
// cached JWT verification; the metered scenario uses a key with a budget, all three limits and a
// model rule, against the same call with the JWT (what the key's governance costs per AI call).
// Runs alternate A B B A; the server's CPU per request is reported beside req/s.
// Usage: node bench/apiKeyOverhead.mjs [seconds]
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { abbaRun, authScenarios, mcpSession } from './authOverhead.mjs';
import { startServer } from './lib.mjs';

const SECRET = 'bench-jwt-secret-0123456789-abcdefghijkl';
const mean = (a, b, key) => (a[key] + b[key]) / 2;

export async function apiKeyOverhead(duration) {
  const here = (p) => fileURLToPath(new URL(p, import.meta.url));
  const up = await startServer(here('./servers/test-upstream.mjs'), ['{"outputTokens":16}']);
  const config = {
    storage: { type: 'memory' },
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'jwt', publicTools: ['greeting', 'echo'] } },
    serverProviders: ['openai'],
    ai: { providers: { openai: { baseUrl: up.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
  };
  const app = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
  const jwt = await mintDevToken({ secret: SECRET, sub: 'bench-user', scopes: ['mcp'], expiresIn: '2h' });
  const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });
  const rpc = async (token, method, params) => {
    const r = await fetch(app.url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    }).then((x) => x.json());
    if (!r.result) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`);
    return r.result;
  };
  await rpc(admin, 'billing.creditTokens', { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'seed' });
  const plain = await rpc(jwt, 'keys.create', { name: 'bench' });
  // A key with every rule that costs something per call: budget rows in the reservation, three limit counters.
  const governed = await rpc(jwt, 'keys.create', {
    name: 'governed',
    budget: { day: { tokens: 1e15 }, total: { usd: 1e8 } },
    limits: { requestsPerMinute: 1e6, tokensPerMinute: 1e12, concurrent: 10_000 },
    models: ['gpt-*'],
  });
  const auth = {
    jwt: { authorization: `Bearer ${jwt}` },
    key: { authorization: `Bearer ${plain.key}` },
    governed: { authorization: `Bearer ${governed.key}` },
  };
  const sessions = { jwt: await mcpSession(app.url, auth.jwt), key: await mcpSession(app.url, auth.key) };
  const metered = {
    name: 'metered ai.generateText (key with budget, limits, models)',
    governed: true,
    req: () => ({
      url: app.url + '/rpc',
      method: 'POST',
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ai.generateText',
        params: {
          content: 'Summarise in one line.',
          systemPrompt: 'Be terse.',
          provider: 'openai',
          options: { model: 'gpt-4.1-mini', maxTokens: 64 },
        },
      }),
    }),
  };
  const scenarios = [...authScenarios(app.url, sessions), metered];
  const half = Math.max(1, duration / 2);
  const runPlain = abbaRun(app, half, (variant) => auth[variant]);
  const runGoverned = abbaRun(app, half, (variant) => (variant === 'key' ? auth.governed : auth.jwt));
  const run = (s, variant) => (s.governed ? runGoverned : runPlain)(s, variant);
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
    await up.stop();
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await apiKeyOverhead(Number(process.argv[2] ?? 8)));
