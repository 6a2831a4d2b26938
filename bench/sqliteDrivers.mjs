// The embedded store on its two SQLite drivers, in ONE process and ONE run: node:sqlite (built
// into Node 22.13+, the default there) against better-sqlite3 (the baseline: the driver every
// store used before). Each driver gets its own fresh file in WAL mode with the default
// `synchronous: 'normal'`, opened through createStorage as a server opens it. Timed, per driver:
// - get: a read of one small record (every request's hot path: keys, balances, preferences);
// - set: one autocommitted write;
// - increment: a BEGIN IMMEDIATE transaction (rate-limit windows, counters);
// - metered call: BillingService reserve then settle, the two transactions (with ledger appends)
//   an exact metered AI call makes.
// The two drivers run the same batch back to back, alternating which goes first, so drift in the
// machine's load hits both alike; each pair gives one ratio node:sqlite / better-sqlite3 (above 1:
// node:sqlite faster), and the report gives the median ratio with its p25–p75 spread, and each
// driver's median operations per second. The first batch warms up and is dropped.
// Usage (after `pnpm build`, on Node 22.13+ with better-sqlite3 built for it):
//   node bench/sqliteDrivers.mjs [opsPerBatch=4000] [batches=20]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as core from '@ai-backend/core/internal';
import { benchBilling } from './lib.mjs';

const OPS = Number(process.argv[2] ?? 4000);
const BATCHES = Number(process.argv[3] ?? 20);
const DRIVERS = ['better-sqlite3', 'node:sqlite'];
const root = await mkdtemp(join(tmpdir(), 'bench-sqlite-drivers-'));

async function open(driver) {
  const storage = await core.createStorage(
    core.resolveConfig({ storage: { type: 'sqlite', dir: join(root, driver.replace(/\W/g, '-')), sqlite: { driver } } }).storage,
  );
  if (storage.driver !== driver) throw new Error(`asked for ${driver}, opened ${storage.driver}`);
  const billing = benchBilling(core, storage);
  await billing.credit({ userId: 'bench', tokens: 1e12, type: 'subscription', idempotencyKey: 'seed', source: 'bench' });
  await storage.set('hot', { userId: 'bench', scopes: ['mcp:call'], budget: { tokens: 1000 } });
  return { storage, billing };
}

const stores = Object.fromEntries(await Promise.all(DRIVERS.map(async (d) => [d, await open(d)])));
const identity = { sub: 'bench', scopes: [], isAdmin: false, via: 'jwt' };
let seq = 0;
const kinds = {
  get: ({ storage }) => storage.get('hot'),
  set: ({ storage }) => storage.set(`k${seq++ % 1000}`, { n: seq, at: Date.now() }),
  increment: ({ storage }) => storage.increment('counter', 1),
  'metered call': async ({ billing }) => {
    const r = await billing.reserve({ identity, tokens: 100, requestId: `r${seq++}` });
    await billing.settle(r, { tokensUsed: 60, provider: 'openai', model: 'gpt-4o-mini' });
  },
};

const timings = Object.fromEntries(Object.keys(kinds).map((k) => [k, { 'better-sqlite3': [], 'node:sqlite': [], ratio: [] }]));
try {
  for (let batch = 0; batch <= BATCHES; batch++) {
    for (const [kind, op] of Object.entries(kinds)) {
      const n = kind === 'metered call' ? Math.ceil(OPS / 4) : OPS;
      const perSec = {};
      for (const driver of batch % 2 ? [...DRIVERS].reverse() : DRIVERS) {
        const t0 = performance.now();
        for (let i = 0; i < n; i++) await op(stores[driver]);
        perSec[driver] = n / ((performance.now() - t0) / 1000);
      }
      if (batch === 0) continue; // warm-up
      for (const d of DRIVERS) timings[kind][d].push(perSec[d]);
      timings[kind].ratio.push(perSec['node:sqlite'] / perSec['better-sqlite3']);
    }
  }
} finally {
  for (const { storage } of Object.values(stores)) await storage.close();
  await rm(root, { recursive: true, force: true });
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
console.log(
  `\nNode ${process.version}, ${BATCHES} timed batches of ${OPS} operations per kind and driver (metered calls: ${Math.ceil(OPS / 4)}), medians\n`,
);
console.log('| operation | better-sqlite3 ops/s | node:sqlite ops/s | node:sqlite / better-sqlite3 (p25–p75 of the batch pairs) |');
console.log('|---|---|---|---|');
for (const [kind, t] of Object.entries(timings)) {
  const r = (p) => pct(t.ratio, p).toFixed(2);
  console.log(
    `| ${kind} | ${Math.round(pct(t['better-sqlite3'], 0.5))} | ${Math.round(pct(t['node:sqlite'], 0.5))} | ${r(0.5)}x (${r(0.25)}–${r(0.75)}) |`,
  );
}
