#!/usr/bin/env node
// What the console's Live view adds to every procedure call: RecentCalls.push (one small object in a
// ring of 500), measured against Stats.record (the per-call statistics counter every call already
// pays) in the same run, alternating A B B A. Uses the built core (npx -y pnpm@10.34.9 build first).
// Usage: node bench/recentCalls.mjs [calls per round, default 1000000]
import { performance } from 'node:perf_hooks';
import { RecentCalls } from '../packages/core/dist/observability/RecentCalls.js';
import { Stats } from '../packages/core/dist/runtime/Stats.js';

const N = Number(process.argv[2] ?? 1_000_000);
const PATHS = ['ai.generateText', 'mcp.echo', 'billing.getTokenBalance', 'admin.overview'];

function round(kind) {
  const stats = new Stats();
  const recent = new RecentCalls();
  const start = performance.now();
  for (let i = 0; i < N; i++) {
    const path = PATHS[i & 3];
    if (kind === 'stats') stats.record('rpc', path, 1.5, false);
    else recent.push({ atMs: Date.now(), entry: 'rpc', procedure: path, identity: 'user-1', via: 'jwt', status: 'ok', latencyMs: 1.5, tokens: null });
  }
  return ((performance.now() - start) * 1e6) / N; // ns per call
}

round('stats');
round('recent'); // warm both paths
const out = { stats: [], recent: [] };
for (const kind of ['stats', 'recent', 'recent', 'stats', 'stats', 'recent', 'recent', 'stats']) out[kind].push(round(kind));
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = median(out.stats);
const r = median(out.recent);
console.log(JSON.stringify({ calls: N, statsRecordNsPerCall: +s.toFixed(1), recentCallsPushNsPerCall: +r.toFixed(1), ratio: +(r / s).toFixed(2) }));
