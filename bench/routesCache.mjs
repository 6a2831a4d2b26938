// Routes and the response cache (issue 40), in one process and one run against a test upstream:
// (1) CPU per call of ai.generateText through a route of two deployments against the same call
//     naming one provider/model (A B B A, process CPU over the calls, ratio routed / direct);
// (2) a cache hit's latency over the gateway's floor: p50 of ai.generateText answered from the
//     cache minus p50 of ai.listAllowedModels (an authenticated call that does no model work).
// Usage: node bench/routesCache.mjs [calls]
import { createRuntime, createCallerFactory, builtinRouter, resolveConfig, createLogger } from '../packages/core/dist/internal.js';
import { MemoryStorage } from '../packages/core/dist/storage/MemoryStorage.js';
import { createTestUpstream } from '../packages/test-utils/dist/index.js';

const N = Number(process.argv[2] ?? 400);
const KEY = 'sk-bench';
const up = await createTestUpstream({ outputTokens: 16 });
const providers = { ...up.aiConfig({ apiKey: KEY }).providers };
for (const id of ['dep-a', 'dep-b'])
  providers[id] = {
    type: 'openai-compatible',
    baseUrl: up.namedBaseUrl(id),
    apiKey: KEY,
    models: { m: { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } },
  };
const config = resolveConfig({
  serverProviders: ['openai', 'dep-a', 'dep-b'],
  mcp: { auth: { authType: 'none' } },
  billing: { vaultKey: 'v'.repeat(40) },
  ai: { providers, routes: { r: { targets: [{ model: 'dep-a/m' }, { model: 'dep-b/m' }] } }, cache: { enabled: true } },
});
const runtime = await createRuntime(config, { storage: new MemoryStorage(), logger: createLogger('error') });
const user = { sub: 'bench', scopes: [], isAdmin: false, via: 'jwt' };
await runtime.billing.credit({ userId: 'bench', tokens: 1e12, type: 'subscription', idempotencyKey: 'b', source: 'bench' });
const caller = createCallerFactory(builtinRouter)({
  runtime,
  identity: user,
  credentialError: null,
  req: { transport: 'internal', ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
});

let n = 0;
const call = (model) =>
  caller.ai.generateText({ content: `bench ${n++}`, systemPrompt: 's', model, cache: 'off', options: { maxTokens: 20 } });
async function cpuPerCall(model, calls) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) await call(model);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / calls;
}
for (let i = 0; i < 50; i++) await call('r'), await call('dep-a/m');
const half = Math.max(10, Math.floor(N / 4));
const a1 = await cpuPerCall('dep-a/m', half);
const b1 = await cpuPerCall('r', half);
const b2 = await cpuPerCall('r', half);
const a2 = await cpuPerCall('dep-a/m', half);
const direct = (a1 + a2) / 2;
const routed = (b1 + b2) / 2;

const p50 = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const hitInput = { content: 'the cached question', systemPrompt: 's', model: 'dep-a/m', options: { maxTokens: 20 } };
await caller.ai.generateText(hitInput);
await new Promise((r) => setTimeout(r, 20));
const hits = [];
const floor = [];
for (let i = 0; i < N; i++) {
  let t = performance.now();
  const r = await caller.ai.generateText(hitInput);
  if (r.data.cache !== 'hit') throw new Error('expected a cache hit');
  hits.push(performance.now() - t);
  t = performance.now();
  await caller.ai.listAllowedModels();
  floor.push(performance.now() - t);
}
const hitP50 = p50(hits);
const floorP50 = p50(floor);
console.log(`\n## Routes and the response cache (node bench/routesCache.mjs ${N}; Node ${process.version})\n`);
console.log('| measure | value |\n|---|---|');
console.log(`| CPU per call, one provider/model | ${direct.toFixed(0)} µs |`);
console.log(`| CPU per call, route of two deployments | ${routed.toFixed(0)} µs |`);
console.log(`| routed / direct | ${(routed / direct).toFixed(3)} (target ≤ 1.05) |`);
console.log(`| cache hit p50 | ${hitP50.toFixed(3)} ms |`);
console.log(`| floor p50 (ai.listAllowedModels) | ${floorP50.toFixed(3)} ms |`);
console.log(`| cache hit added over the floor, p50 | ${(hitP50 - floorP50).toFixed(3)} ms (target ≤ 0.5) |`);
await runtime.close();
await up.close();
