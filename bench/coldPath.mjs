// The cold path (issue 41): what the first calls of each entry point cost against the same call
// once the server is warm, and which modules the first call loads. Each path on a freshly
// started server (bench/servers/ai-backend.mjs, memory store, JWT, OpenAI over Chat Completions
// to the canned upstream), one call at a time; the server's CPU per call (all threads, from
// /proc/<pid>/task/*/schedstat: steady on a loaded machine, unlike wall time) in windows: call 1,
// calls 2–15 (the independent benchmark's warm-up), calls 16–190 (its cold rounds), and 175
// calls after 1,500 more (warm; the second argument). Modules are logged by bench/servers/moduleLog.mjs.
//
// Usage (after `npx -y pnpm@10.34.9 build`):
//   node bench/coldPath.mjs [paths=v1-byok,v1-metered,rpc,trpc,mcp] [warm-up calls=1500]
// AIB_COLD_CONFIG='{"ai":{...}}' is merged into the server's config (e.g. a switch to compare).
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mintDevToken } from '@ai-backend/auth';
import { loadAverage, startServer } from './lib.mjs';

const paths = (process.argv[2] ?? 'v1-byok,v1-metered,rpc,trpc,mcp').split(',');
const WARM = Number(process.argv[3] ?? 1500);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const SECRET = 'bench-cold-path-jwt-secret-0123456789abcdef';
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

async function cpuSeconds(pid) {
  let ns = 0;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => []))
    ns += Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '0')).split(' ')[0]);
  return ns / 1e9;
}

const upstream = await startServer(here('./servers/canned-openai.mjs'));
children.push(upstream.child);
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });
const extra = JSON.parse(process.env.AIB_COLD_CONFIG ?? '{}');
const config = {
  ...extra,
  storage: { type: 'memory' },
  mcp: { ...extra.mcp, auth: { authType: 'jwt' } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { ...extra.ai, providers: { openai: { baseUrl: upstream.url, apiKey: 'sk-bench-server-key', api: 'chat' } } },
};
const json = { 'content-type': 'application/json' };
const chat = JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 });
const MCP_HEADERS = { ...json, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** One request per path: [url suffix, init, check of the answer]. */
const requests = {
  'v1-byok': () => [
    '/v1/chat/completions',
    { method: 'POST', headers: { ...json, authorization: `Bearer ${user}`, 'x-provider-api-key': 'sk-byok' }, body: chat },
    (t) => t.includes('"usage"'),
  ],
  'v1-metered': () => [
    '/v1/chat/completions',
    { method: 'POST', headers: { ...json, authorization: `Bearer ${user}` }, body: chat },
    // Metered: the SDK path says so in the body (`ai_backend.token_usage`), the pass-through path in a header.
    (t, res) => t.includes('"token_usage"') || res.headers.has('x-ai-backend-tokens-charged'),
  ],
  rpc: () => [
    '/rpc',
    {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${user}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ai.generateText',
        params: { content: 'ping', systemPrompt: 'You are terse.', provider: 'openai', options: { maxTokens: 1 } },
      }),
    },
    (t) => t.includes('"tokenUsage"'),
  ],
  trpc: () => [
    `/trpc/mcp.echo?input=${encodeURIComponent(JSON.stringify({ json: { message: 'hi' } }))}`,
    { headers: { authorization: `Bearer ${user}` } },
    (t) => t.includes('hi'),
  ],
  mcp: (session) => [
    '/mcp',
    {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${user}`, 'mcp-session-id': session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'greeting', arguments: { name: 'bench' } } }),
    },
    (t) => t.includes('Hello') || t.includes('bench'),
  ],
};

async function mcpSession(url) {
  const init = await fetch(url + '/mcp', {
    method: 'POST',
    headers: { ...MCP_HEADERS, authorization: `Bearer ${user}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const id = init.headers.get('mcp-session-id');
  await init.text();
  await (
    await fetch(url + '/mcp', {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${user}`, 'mcp-session-id': id },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    })
  ).text();
  return id;
}

const dir = await mkdtemp(join(tmpdir(), 'aib-cold-path-'));
const loadBefore = await loadAverage();
const rows = [];
for (const path of paths) {
  const log = join(dir, `${path}.log`);
  const server = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)], {
    NODE_FLAGS: `--import ${here('./servers/moduleLog.mjs')}`,
    AIB_MODULE_LOG: log,
  });
  children.push(server.child);
  if (path === 'v1-metered' || path === 'rpc')
    await fetch(server.url + '/rpc', {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${admin}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'billing.creditTokens',
        params: { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'c' },
      }),
    }).then((r) => r.text());
  const session = path === 'mcp' ? await mcpSession(server.url) : undefined;
  const [suffix, init, check] = requests[path](session);
  const send = async () => {
    const res = await fetch(server.url + suffix, init);
    const text = await res.text();
    if (res.status !== 200 || !check(text, res)) throw new Error(`${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  };
  const loadedBefore = new Set((await readFile(log, 'utf8').catch(() => '')).split('\n'));
  const windows = {};
  const measure = async (name, n) => {
    const c0 = await cpuSeconds(server.pid);
    for (let i = 0; i < n; i++) await send();
    windows[name] = (((await cpuSeconds(server.pid)) - c0) * 1e6) / n;
  };
  await measure('call 1', 1);
  const firstLoads = [...new Set((await readFile(log, 'utf8').catch(() => '')).split('\n'))].filter((u) => u && !loadedBefore.has(u));
  await measure('calls 2–15', 14);
  await measure('calls 16–190', 175);
  for (let i = 0; i < WARM; i++) await send();
  await measure('warm (175)', 175);
  const allAfter = [...new Set((await readFile(log, 'utf8').catch(() => '')).split('\n'))].filter((u) => u && !loadedBefore.has(u));
  await server.stop();
  rows.push({ path, windows, firstLoads, laterLoads: allAfter.filter((u) => !firstLoads.includes(u)) });
}
await upstream.stop();
await rm(dir, { recursive: true, force: true });

const short = (u) =>
  u.replace(/^file:\/\/.*?node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?/, '').replace(/^file:\/\/.*?\/packages\//, 'packages/');
console.log(`\n## The cold path: server CPU per call (µs), node ${process.version}, load average ${loadBefore} → ${await loadAverage()}\n`);
console.log(
  `| path | call 1 | calls 2–15 | calls 16–190 | warm (after ${WARM} more) | 16–190 / warm | modules loaded by call 1 | by later calls |`,
);
console.log('|---|---|---|---|---|---|---|---|');
const us = (x) => Math.round(x);
for (const r of rows) {
  const w = r.windows;
  console.log(
    `| ${r.path} | ${us(w['call 1'])} | ${us(w['calls 2–15'])} | ${us(w['calls 16–190'])} | ${us(w['warm (175)'])} | ${(w['calls 16–190'] / w['warm (175)']).toFixed(2)} | ${r.firstLoads.length} | ${r.laterLoads.length} |`,
  );
}
for (const r of rows) {
  if (r.firstLoads.length + r.laterLoads.length === 0) continue;
  const pkgs = (list) =>
    [
      ...new Set(
        list.map((u) =>
          short(u)
            .split('/')
            .slice(0, short(u).startsWith('@') ? 2 : 1)
            .join('/'),
        ),
      ),
    ].join(', ');
  console.log(
    `\n${r.path}: call 1 loaded ${r.firstLoads.length} modules (${pkgs(r.firstLoads)})${r.laterLoads.length ? `; later calls ${r.laterLoads.length} (${pkgs(r.laterLoads)})` : ''}`,
  );
}
process.exit(0);
