// Where a metered ai.generateText spends its storage work: every PostgreSQL round trip and every
// Redis command the server sends per call, by statement kind, plus the process's CPU per call.
// Everything runs in this one process (server, test upstream, client) so the drivers can be
// counted; the CPU figure therefore includes the client and the upstream (about 100 µs per call,
// the same for every store). Usage (after `pnpm build`; PostgreSQL on 127.0.0.1:5432, database
// `test`; Redis on 127.0.0.1:6379):
//   node bench/meteredCallProfile.mjs [calls=300] [stores=memory,sqlite,postgres,postgres+redis,redis]
// With `node --cpu-prof --cpu-prof-dir=<dir> bench/meteredCallProfile.mjs 2000 postgres` the
// profile holds one store's calls only.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { createServer } from 'ai-backend';
import { createTestUpstream } from '@ai-backend/test-utils';
import { mintDevToken } from '@ai-backend/auth';

const calls = Number(process.argv[2] ?? 300);
const stores = (process.argv[3] ?? 'memory,sqlite,postgres,postgres+redis,redis').split(',');
const SECRET = 'bench-profile-jwt-secret-0123456789abcdef';
const INPUT = {
  content: 'Summarise the benchmark in one line.',
  systemPrompt: 'You are terse.',
  provider: 'openai',
  options: { maxTokens: 64 },
};

// The drivers the server loads (same module instances: resolved from the core package).
const requireCore = createRequire(createRequire(import.meta.url).resolve('@ai-backend/core'));
const pg = requireCore('pg');
const counts = new Map();
let counting = false;
const count = (what) => {
  if (counting) counts.set(what, (counts.get(what) ?? 0) + 1);
};
/** A statement's kind: its first words, literals and parameters dropped. */
const kind = (text) => {
  const statements = text
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
  const head = (s) =>
    s
      .replace(/'(?:[^']|'')*'/g, '?')
      .replace(/\s+/g, ' ')
      .slice(0, 70);
  return statements.length > 1
    ? `batch of ${statements.length}: ${statements
        .map((s) => head(s).split(' ').slice(0, 3).join(' '))
        .join(' | ')
        .slice(0, 160)}`
    : head(statements[0] ?? '');
};
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  const text = typeof config === 'string' ? config : (config?.text ?? '');
  count(`pg round trip: ${kind(text)}`);
  count('pg round trips (total)');
  return query.call(this, config, ...rest);
};
const sendCommand = Redis.prototype.sendCommand;
const requireCoreRedis = requireCore('ioredis');
for (const R of new Set([Redis, requireCoreRedis.Redis ?? requireCoreRedis.default ?? requireCoreRedis])) {
  const original = R.prototype.sendCommand ?? sendCommand;
  R.prototype.sendCommand = function (command, ...rest) {
    count(`redis: ${command.name}`);
    count('redis commands (total)');
    return original.call(this, command, ...rest);
  };
}

const upstream = await createTestUpstream({ outputTokens: 16 });
const dir = await mkdtemp(join(tmpdir(), 'bench-profile-'));
const schema = `bench_profile_${process.pid}`;
const keyPrefix = `bench-profile-${process.pid}:`;
const pgConn = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'postgres', database: 'test' };
const redis = { host: '127.0.0.1', port: 6379, keyPrefix };
const storageFor = {
  memory: { type: 'memory' },
  sqlite: { type: 'sqlite', dir },
  postgres: { type: 'postgres', postgres: { ...pgConn, schema } },
  'postgres+redis': { type: 'postgres', postgres: { ...pgConn, schema: `${schema}_r` }, shared: 'redis', redis },
  redis: { type: 'redis', redis: { ...redis, keyPrefix: `${keyPrefix}store:` } },
};
const user = await mintDevToken({ secret: SECRET, sub: 'profile-user', expiresIn: '1h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'profile-admin', scopes: ['mcp:admin'], expiresIn: '1h' });
const rpc = async (url, token, method, params) => {
  const res = await fetch(url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
};

const report = [];
try {
  for (const name of stores) {
    const server = createServer({
      port: 0,
      monitoring: { logging: { level: 'error' } },
      storage: storageFor[name],
      // One profiling caller makes thousands of calls: explicitly past the default rate limits.
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      jwt: { secret: SECRET },
      serverProviders: ['openai'],
      ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
    });
    const { url } = await server.start();
    await rpc(url, admin, 'billing.creditTokens', {
      userId: 'profile-user',
      tokens: 1e12,
      type: 'subscription',
      idempotencyKey: 'profile-credit',
    });
    for (let i = 0; i < 50; i++) await rpc(url, user, 'ai.generateText', INPUT); // warm-up
    counts.clear();
    counting = true;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) {
      const r = await rpc(url, user, 'ai.generateText', INPUT);
      if (!r.tokenUsage) throw new Error('not a metered call');
      upstream.reset();
    }
    const ms = (performance.now() - t0) / calls;
    const cpu = process.cpuUsage(cpu0);
    counting = false;
    await server.stop();
    const perCall = [...counts].map(([k, v]) => [k, v / calls]).sort((a, b) => b[1] - a[1]);
    report.push({ name, ms, cpuUs: (cpu.user + cpu.system) / calls, perCall });
    console.error(`${name}: ${ms.toFixed(2)} ms/call sequential, ${Math.round((cpu.user + cpu.system) / calls)} µs CPU/call (process)`);
  }
} finally {
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
  const db = new pg.Client(pgConn);
  await db.connect();
  await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await db.query(`DROP SCHEMA IF EXISTS "${schema}_r" CASCADE`);
  await db.end();
  const r = new Redis({ host: '127.0.0.1', port: 6379 });
  const keys = await r.keys(`${keyPrefix}*`);
  if (keys.length) await r.del(...keys);
  await r.quit();
}

console.log(`\n### Storage work per metered ai.generateText (${calls} sequential calls of one user, node ${process.version})\n`);
for (const r of report) {
  console.log(
    `#### ${r.name}: ${r.ms.toFixed(2)} ms per call, ${Math.round(r.cpuUs)} µs CPU per call (server + client + upstream in one process)\n`,
  );
  if (!r.perCall.length) console.log('(no driver traffic)\n');
  else {
    console.log('| per call | what |\n|---|---|');
    for (const [k, v] of r.perCall) console.log(`| ${Number.isInteger(v) ? v : v.toFixed(2)} | ${k.replace(/\|/g, '\\|')} |`);
    console.log('');
  }
}
