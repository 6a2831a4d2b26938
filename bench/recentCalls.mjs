#!/usr/bin/env node
// What the console adds to every procedure call: RecentCalls.push (one small object in a ring of 500),
// and to every upstream HTTP attempt: UpstreamStats.record (a bucket count per day, provider and
// model), each measured against Stats.record (the per-call statistics counter every call already
// pays) in the same run, alternating A B B A. Uses the built core (npx -y pnpm@10.34.9 build first).
// Usage: node bench/recentCalls.mjs [calls per round, default 1000000]
import { performance } from 'node:perf_hooks';
import { RecentCalls } from '../packages/core/dist/observability/RecentCalls.js';
import { Stats } from '../packages/core/dist/runtime/Stats.js';
import { UpstreamStats } from '../packages/core/dist/observability/UpstreamStats.js';

const N = Number(process.argv[2] ?? 1_000_000);
const PATHS = ['ai.generateText', 'mcp.echo', 'billing.getTokenBalance', 'admin.overview'];
const MODELS = ['gpt-4.1-mini', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'gpt-4.1'];

function round(kind) {
  const stats = new Stats();
  const recent = new RecentCalls();
  const upstream = new UpstreamStats();
  const start = performance.now();
  for (let i = 0; i < N; i++) {
    const path = PATHS[i & 3];
    if (kind === 'stats') stats.record('rpc', path, 1.5, false);
    else if (kind === 'upstream') upstream.record('openai', MODELS[i & 3], '2xx', 0.35);
    else
      recent.push({
        atMs: Date.now(),
        entry: 'rpc',
        procedure: path,
        identity: 'user-1',
        via: 'jwt',
        status: 'ok',
        latencyMs: 1.5,
        tokens: null,
      });
  }
  return ((performance.now() - start) * 1e6) / N; // ns per call
}

round('stats');
round('recent');
round('upstream'); // warm every path
const out = { stats: [], recent: [], upstream: [] };
for (const kind of [
  'stats',
  'recent',
  'upstream',
  'upstream',
  'recent',
  'stats',
  'stats',
  'recent',
  'upstream',
  'upstream',
  'recent',
  'stats',
])
  out[kind].push(round(kind));
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = median(out.stats);
const r = median(out.recent);
const u = median(out.upstream);
console.log(
  JSON.stringify({
    calls: N,
    statsRecordNsPerCall: +s.toFixed(1),
    recentCallsPushNsPerCall: +r.toFixed(1),
    ratio: +(r / s).toFixed(2),
    upstreamStatsRecordNsPerCall: +u.toFixed(1),
    upstreamRatio: +(u / s).toFixed(2),
  }),
);
