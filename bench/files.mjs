// Server workspaces benchmark (issue 3): through POST /rpc, in ONE run,
//  - system.listFiles recursive over a tree of 10,000 files,
//  - system.readFile of a 1 MiB file as utf8 and as base64,
// at 10 and 50 connections, with baselines measured in the same run: the bare `/rpc system.test`
// call on the same server (dispatch overhead) and Node's fs serving the same listing / file
// through a bare Hono route (bench/servers/bare-files.mjs). Ratios, not absolute numbers, are
// what carry from one machine to another.
// Usage (after `pnpm build`): node bench/files.mjs [seconds per scenario, default 5]
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchTree } from '@ai-backend/test-utils';
import { load, rssMb, startServer, table } from './lib.mjs';

const duration = Number(process.argv[2] ?? 5);
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const MIB = 1024 * 1024;

// ---- Fixture: a 10,000-file tree and a 1 MiB text file, in separate workspaces -------------
const base = await mkdtemp(path.join(os.tmpdir(), 'aib-bench-files-'));
const treeRoot = path.join(base, 'tree');
const filesRoot = path.join(base, 'files');
await mkdir(filesRoot, { recursive: true });
const tree = await createBenchTree(treeRoot, 10_000);
const line = 'The quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ.\n';
const big = path.join(filesRoot, 'big.txt');
await writeFile(big, line.repeat(Math.ceil(MIB / line.length)).slice(0, MIB));

const config = {
  storage: { type: 'memory' },
  mcp: { auth: { authType: 'none' } },
  serverWorkspaces: { tree: { path: treeRoot }, files: { path: filesRoot } },
};
const app = await startServer(here('./servers/ai-backend.mjs'), [JSON.stringify(config)]);
const bare = await startServer(here('./servers/bare-files.mjs'), [JSON.stringify({ treeRoot, file: big })]);

const rpc = (method, params) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const scenarios = [
  { name: 'POST /rpc system.test (baseline)', url: app.url + '/rpc', body: rpc('system.test', { message: 'test' }) },
  { name: 'bare Node fs: readdir walk → JSON', url: bare.url + '/list', body: '{}', bare: true },
  {
    name: 'POST /rpc system.listFiles recursive (10,000 files)',
    url: app.url + '/rpc',
    body: rpc('system.listFiles', { workspaceId: 'tree', recursive: true }),
    vs: 1,
  },
  { name: 'bare Node fs: readFile 1 MiB utf8 → JSON', url: bare.url + '/read', body: JSON.stringify({ encoding: 'utf8' }), bare: true },
  {
    name: 'POST /rpc system.readFile 1 MiB utf8',
    url: app.url + '/rpc',
    body: rpc('system.readFile', { workspaceId: 'files', path: 'big.txt' }),
    vs: 3,
  },
  { name: 'bare Node fs: readFile 1 MiB base64 → JSON', url: bare.url + '/read', body: JSON.stringify({ encoding: 'base64' }), bare: true },
  {
    name: 'POST /rpc system.readFile 1 MiB base64',
    url: app.url + '/rpc',
    body: rpc('system.readFile', { workspaceId: 'files', path: 'big.txt', encoding: 'base64' }),
    vs: 5,
  },
];

// JSON-RPC errors are HTTP 200: check every scenario's answer before and after the load, so a
// refused call can never pass for a fast one.
async function check(s) {
  const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: s.body });
  const body = await res.json();
  if (res.status !== 200 || !body.result) throw new Error(`${s.name}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  const r = body.result;
  if (Array.isArray(r) && r.filter((p) => !p.endsWith('/')).length !== tree.files) throw new Error(`${s.name}: ${r.length} entries`);
  if (r.size !== undefined && (r.size !== MIB || Buffer.from(r.content, r.encoding === 'base64' ? 'base64' : 'utf8').length !== MIB))
    throw new Error(`${s.name}: wrong content`);
}

const results = {};
let peakRss = 0;
for (const connections of [10, 50]) {
  const rows = [];
  for (const s of scenarios) {
    await check(s);
    rows.push({ name: s.name, ...(await load({ url: s.url, method: 'POST', body: s.body, connections, duration, warmup: 1 })) });
    await check(s);
    peakRss = Math.max(peakRss, await rssMb(app.pid));
  }
  results[connections] = rows;
}
await app.stop();
await bare.stop();
await rm(base, { recursive: true, force: true });

// ---- Report ---------------------------------------------------------------------------------
const fmt = (x) => x.toFixed(2);
console.log(`\n## Server workspaces (${duration}s per scenario, node ${process.version}, ${os.cpus().length} CPUs)\n`);
console.log(`Tree: ${tree.files} files in ${tree.dirs} folders (${tree.files + tree.dirs} entries listed); file: ${MIB} bytes of text.\n`);
for (const [connections, rows] of Object.entries(results)) {
  console.log(`### ${connections} connections\n`);
  console.log(table(rows, rows[0]));
  console.log(
    '\n| /rpc scenario | ratio to bare Node fs doing the same work (req/s) | cost in `system.test` calls (baseline req/s ÷ req/s) |\n|---|---|---|',
  );
  scenarios.forEach((s, i) => {
    if (s.vs !== undefined) console.log(`| ${s.name} | ${fmt(rows[i].rps / rows[s.vs].rps)} | ${Math.round(rows[0].rps / rows[i].rps)} |`);
  });
  console.log('');
}
console.log(`Server RSS peak during the run: ${peakRss} MB`);
