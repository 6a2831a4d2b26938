// Where the wall-clock time of one paced metered call goes: timestamps per step of
// ai.generateText inside the server (request in, each storage operation, the upstream request
// and its answer, the response written), for calls sent one at a time (paced, like bench/ai.mjs
// at a low rate: nothing queues, so every gap is the call's own waiting or work). The server runs
// in this process (its storage wrapped to timestamp every operation); the test upstream runs in
// its own process, as in bench/ai.mjs. Usage (after `pnpm build`):
//   node bench/meteredCallTrace.mjs [calls=300] [stores=memory,sqlite,redis,postgres] [byok]
// Prints, per store, the median offset (ms from the request's arrival) of each step and the
// median gap before it, for the calls whose steps came in the most common order.
import http from 'node:http';
import diagnostics from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'ai-backend';
import { createStorage, resolveConfig } from '@ai-backend/core';
import { mintDevToken } from '@ai-backend/auth';
import { startServer } from './lib.mjs';

const calls = Number(process.argv[2] ?? 300);
const stores = (process.argv[3] ?? 'memory,sqlite,redis,postgres').split(',');
const withByok = process.argv[4] === 'byok';
const SECRET = 'bench-trace-jwt-secret-0123456789abcdef0';
const INPUT = {
  content: 'Summarise the benchmark in one line.',
  systemPrompt: 'You are terse.',
  provider: 'openai',
  options: { maxTokens: 64 },
};
const here = (p) => fileURLToPath(new URL(p, import.meta.url));

/** The steps of the call being traced (one at a time), as [label, ms since it arrived]. */
let trace;
let t0 = 0;
let c0 = 0;
const cpuUs = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
/** A step: its label, ms since the request arrived, process CPU µs since then. */
const mark = (label) => trace?.push([label, performance.now() - t0, cpuUs() - c0]);
diagnostics.subscribe('http.server.request.start', () => {
  t0 = performance.now();
  c0 = cpuUs();
  trace = [];
});
diagnostics.subscribe('http.server.response.finish', () => mark('response finished'));
// The upstream call goes through node:http (services/ai/upstreamFetch.ts), whose client channels these are.
diagnostics.subscribe('http.client.request.start', () => mark('upstream request created'));
diagnostics.subscribe('http.client.response.finish', () => mark('upstream answered'));

const keyKind = (k) =>
  typeof k === 'string'
    ? k
        .split(':')
        .slice(0, 2)
        .join(':')
        .replace(/[0-9a-f-]{16,}/g, '…')
    : Array.isArray(k)
      ? k.map(keyKind).join(',')
      : '';
/** The storage, every operation timestamped at its start and end. */
function traced(storage) {
  return new Proxy(storage, {
    get(target, prop) {
      const v = target[prop];
      if (typeof v !== 'function' || prop === 'close' || prop === 'health') return typeof v === 'function' ? v.bind(target) : v;
      return (...args) => {
        const what = `${String(prop)}(${keyKind(args[0])})`;
        mark(`${what} start`);
        const p = v.apply(target, args);
        return p && typeof p.then === 'function' ? p.finally(() => mark(`${what} end`)) : p;
      };
    },
  });
}

const upstream = await startServer(here('./servers/test-upstream.mjs'), [JSON.stringify({ outputTokens: 16 })]);
const dir = await mkdtemp(join(tmpdir(), 'bench-trace-'));
const schema = `bench_trace_${process.pid}`;
const keyPrefix = `bench-trace-${process.pid}:`;
const storageFor = {
  memory: { type: 'memory' },
  sqlite: { type: 'sqlite', dir },
  postgres: { type: 'postgres', postgres: { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'root', database: 'test', schema } },
  redis: { type: 'redis', redis: { host: '127.0.0.1', port: 6379, keyPrefix } },
};
const user = await mintDevToken({ secret: SECRET, sub: 'trace-user', expiresIn: '1h' });
const admin = await mintDevToken({ secret: SECRET, sub: 'trace-admin', scopes: ['mcp:admin'], expiresIn: '1h' });
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const post = (url, token, body) =>
  new Promise((resolve, reject) => {
    const u = new URL(url);
    const text = JSON.stringify(body);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), authorization: `Bearer ${token}` },
      },
      (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (b += c));
        res.on('end', () => resolve(JSON.parse(b)));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
const rpc = async (url, token, method, params) => {
  const body = await post(url + '/rpc', token, { jsonrpc: '2.0', id: 1, method, params });
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  for (const name of stores) {
    for (const byok of withByok ? [false, true] : [false]) {
      const config = resolveConfig({
        port: 0,
        monitoring: { logging: { level: 'error' } },
        storage: storageFor[name],
        mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
        jwt: { secret: SECRET },
        serverProviders: ['openai'],
        ai: { providers: { openai: { baseUrl: upstream.baseUrls.openai, apiKey: 'sk-bench-server-key' } } },
      });
      const storage = await createStorage(config.storage);
      const server = createServer(config, { storage: traced(storage) });
      const { url } = await server.start();
      const input = byok ? { ...INPUT, apiKey: 'sk-trace-user-key' } : INPUT;
      await rpc(url, admin, 'billing.creditTokens', {
        userId: 'trace-user',
        tokens: 1e12,
        type: 'subscription',
        idempotencyKey: 'trace-credit',
      });
      for (let i = 0; i < 50; i++) await rpc(url, user, 'ai.generateText', input);
      const traces = [];
      const totals = [];
      for (let i = 0; i < calls; i++) {
        await new Promise((r) => setTimeout(r, 10)); // paced: the server is idle when each call arrives
        const s = performance.now();
        const r = await rpc(url, user, 'ai.generateText', input);
        totals.push(performance.now() - s);
        if (!byok && !r.tokenUsage) throw new Error('not a metered call');
        if (trace) traces.push(trace);
        trace = undefined;
      }
      await server.stop();
      await storage.close();
      // The most common sequence of steps; medians over the calls that followed it.
      const shapes = new Map();
      for (const t of traces) {
        const key = t.map(([l]) => l).join('|');
        shapes.set(key, [...(shapes.get(key) ?? []), t]);
      }
      const [shape, same] = [...shapes].sort((a, b) => b[1].length - a[1].length)[0];
      const labels = shape.split('|');
      console.log(
        `\n#### ${name}${byok ? ', BYOK' : ', metered'}: client-side p50 ${median(totals).toFixed(2)} ms (${same.length} of ${traces.length} calls in this order)\n`,
      );
      console.log('| step | ms since arrival (p50) | gap before it, ms (p50) | CPU µs in the gap (p50) |\n|---|---|---|---|');
      labels.forEach((l, i) => {
        const at = median(same.map((t) => t[i][1]));
        const gap = median(same.map((t) => t[i][1] - (i ? t[i - 1][1] : 0)));
        const cpu = median(same.map((t) => t[i][2] - (i ? t[i - 1][2] : 0)));
        console.log(`| ${l} | ${at.toFixed(3)} | ${gap.toFixed(3)} | ${Math.round(cpu)} |`);
      });
      console.log(
        `| (whole call, server side) | | ${median(same.map((t) => t.at(-1)[1])).toFixed(3)} | ${Math.round(median(same.map((t) => t.at(-1)[2])))} |`,
      );
    }
  }
} finally {
  agent.destroy();
  await upstream.stop();
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
