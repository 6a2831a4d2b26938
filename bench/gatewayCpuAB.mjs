// Gateway CPU per metered / BYOK ai.generateText call, two builds side by side (issue 10/13 perf work).
// Usage: WARM=1500 node bench/gatewayCpuAB.mjs <treeA> <treeB> <rounds> <requests per round> [modes=metered,byok] [conns=10]
//   AB_STORAGE='{"type":"postgres","postgres":{"connectionString":"postgres://127.0.0.1:5432/test"}}' … (default: memory);
//   AB_STORAGE='{"type":"sqlite"}' gives each gateway its own file under the temp dir (or under "dir")
// treeA/treeB are built checkouts (e.g. git worktrees of two commits). Both gateways are loaded at the same
// time so both see the same machine; CPU per request is read from /proc/<pid>/stat (robust to shared load).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const [wtA, wtB, rounds = '6', secs = '3', modesArg = 'metered,byok', conns = '10'] = process.argv.slice(2);
const req = createRequire(wtA + '/bench/ai.mjs');
const autocannon = req('autocannon');
const { mintDevToken } = await import(req.resolve('@ai-backend/auth'));
const kids = [];
process.on('exit', () => kids.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
function start(wt, script, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: wt, stdio: ['ignore', 'pipe', 'inherit'] });
    kids.push(child);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const l = out.split('\n').find((x) => x.startsWith('{'));
      if (l) resolve({ ...JSON.parse(l), child });
    });
    child.on('exit', (c) => reject(new Error('exit ' + c)));
  });
}
const SECRET = 'bench-ai-jwt-secret-0123456789abcdef0123';
const up = await start(wtA, wtA + '/bench/servers/test-upstream.mjs', ['{"outputTokens":16}']);
const config = {
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'jwt' } },
  jwt: { secret: SECRET },
  serverProviders: ['openai'],
  ai: { providers: { openai: { baseUrl: up.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
};
const user = await mintDevToken({ secret: SECRET, sub: 'bench-user', expiresIn: '2h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'bench-admin', scopes: ['mcp:admin'], expiresIn: '2h' });
const INPUT = {
  content: 'Summarise the benchmark in one line.',
  systemPrompt: 'You are terse.',
  provider: 'openai',
  options: { maxTokens: 64 },
};
const modes = modesArg.split(',');
const gws = {};
// AB_STORAGE (a storage config as JSON, e.g. PostgreSQL) instead of memory; each gateway gets its
// own PostgreSQL schema or Redis key prefix, so neither sees the other's rows.
const storageFor = (name) => {
  if (!process.env.AB_STORAGE) return config.storage;
  const s = JSON.parse(process.env.AB_STORAGE);
  const tag = `ab_${process.pid}_${name.toLowerCase()}`;
  if (s.postgres) s.postgres.schema = tag;
  if (s.redis) s.redis.keyPrefix = tag + ':';
  // SQLite: one file per gateway (a file is opened by one server at a time).
  if (s.type === 'sqlite') s.dir = join(s.dir ?? tmpdir(), tag);
  return s;
};
for (const [name, wt] of [
  ['A', wtA],
  ['B', wtB],
]) {
  const gw = await start(wt, wt + '/bench/servers/ai-backend.mjs', [JSON.stringify({ ...config, storage: storageFor(name) })]);
  const rpc = async (token, method, params) => {
    const r = await (
      await fetch(gw.url + '/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      })
    ).json();
    if (r.error) throw new Error(JSON.stringify(r.error));
    return r.result;
  };
  await rpc(admin, 'billing.creditTokens', { userId: 'bench-user', tokens: 1e12, type: 'subscription', idempotencyKey: 'c' });
  if (!(await rpc(user, 'ai.generateText', INPUT)).tokenUsage) throw new Error('not metered');
  gws[name] = gw;
}
const opts = (gw, mode) => ({
  url: gw.url + '/rpc',
  method: 'POST',
  connections: Number(conns),
  headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'ai.generateText',
    params: mode === 'byok' ? { ...INPUT, apiKey: 'sk-bench-user-key' } : INPUT,
  }),
  verifyBody: mode === 'byok' ? (b) => b.includes('"success":true') && !b.includes('"tokenUsage"') : (b) => b.includes('"tokenUsage"'),
});
const cpu = async (pid) => {
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
// Warm-up: both, every mode.
for (const mode of modes)
  await Promise.all(Object.values(gws).map((g) => autocannon({ ...opts(g, mode), amount: Number(process.env.WARM ?? 1000) })));
const tot = {};
for (let r = 0; r < Number(rounds); r++)
  for (const mode of modes) {
    const res = await Promise.all(
      Object.entries(gws).map(async ([name, g]) => {
        const c0 = await cpu(g.child.pid);
        const a = await autocannon({ ...opts(g, mode), amount: Number(secs) });
        const c1 = await cpu(g.child.pid);
        return { name, n: a.requests.total, cpu: c1 - c0, bad: a.non2xx + a.errors + a.timeouts + a.mismatches };
      }),
    );
    for (const x of res) {
      const k = mode + x.name;
      tot[k] ??= { n: 0, cpu: 0, bad: 0 };
      tot[k].n += x.n;
      tot[k].cpu += x.cpu;
      tot[k].bad += x.bad;
    }
    const [a, b] = res;
    console.log(
      JSON.stringify({
        round: r,
        mode,
        A: Math.round((a.cpu * 1e6) / a.n),
        B: Math.round((b.cpu * 1e6) / b.n),
        ratio: +(b.cpu / b.n / (a.cpu / a.n)).toFixed(3),
        nA: a.n,
        nB: b.n,
        bad: a.bad + b.bad,
        load: (await readFile('/proc/loadavg', 'utf8')).split(' ')[0],
      }),
    );
  }
for (const mode of modes) {
  const a = tot[mode + 'A'],
    b = tot[mode + 'B'];
  console.log(
    `TOTAL ${mode}: A ${Math.round((a.cpu * 1e6) / a.n)} µs/req (${a.n}), B ${Math.round((b.cpu * 1e6) / b.n)} µs/req (${b.n}), B/A ${(b.cpu / b.n / (a.cpu / a.n)).toFixed(3)}, bad ${a.bad + b.bad}`,
  );
}
process.exit(0);
