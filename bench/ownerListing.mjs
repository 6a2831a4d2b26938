// An owner's listing on the Redis store (an owner's API keys, stored provider keys, client
// workspaces: `storage.keys('apikeyowner:<user>:')`) among 1,000 and then 1,000,000 unrelated keys
// (closed holds, the bulk of a real store), in ONE run, against a listing of a prefix the store
// does not index (a SCAN of the whole keyspace, as the owner listings were before the per-owner
// index, docs/storage.md), and a family's listing (the server workspaces, `ws:server:`, through
// the per-family index, as the alert views, cache clear, statistics reset and vault rotation).
// Then the one-time build of the indexes when a store of format 1 (no index) opens with this
// release. Runs its own redis-server (no persistence) on a free port, so the shared Redis is not
// filled. Usage (after `pnpm build`; redis-server on the PATH):
//   node bench/ownerListing.mjs [bigKeys=1000000] [rounds=50]
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import { RedisStorage } from '../packages/core/dist/storage/RedisStorage.js';
import { percentile } from './lib.mjs';

const BIG = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = Number(process.argv[3] ?? 50);
const SMALL = 1000;
const PREFIX = 'bench:';

const port = await new Promise((resolve) => {
  const srv = createServer().listen(0, '127.0.0.1', () => {
    const { port } = srv.address();
    srv.close(() => resolve(port));
  });
});
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    if (out.includes('Ready to accept connections')) resolve();
  });
  server.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
});

const raw = new Redis({ host: '127.0.0.1', port });
try {
  const store = await RedisStorage.connect({ host: '127.0.0.1', port, keyPrefix: PREFIX });
  // One owner's 5 API keys, and as many rows under a prefix without an index, for the SCAN row.
  for (let i = 0; i < 5; i++) {
    await store.set(`apikeyowner:owner-1:key${i}`, { i });
    await store.set(`unindexed:owner-1:key${i}`, { i });
    await store.set(`ws:server:w${i}`, { i });
  }
  let filled = 0;
  const fill = async (upTo) => {
    for (; filled < upTo; ) {
      const batch = raw.pipeline();
      for (const end = Math.min(upTo, filled + 10_000); filled < end; filled++) {
        batch.set(`${PREFIX}kv:holddone:user-${filled % 5000}:${filled}`, '{"settled":true}', 'PX', 604_800_000);
      }
      await batch.exec();
    }
  };
  // SCAN listings take up to a second each at a million keys: fewer rounds of them.
  const time = async (list, rounds = ROUNDS) => {
    const ms = [];
    for (let r = 0; r < 3; r++) await list(); // warm: the script loaded, the connection busy
    for (let r = 0; r < rounds; r++) {
      const t = performance.now();
      const keys = await list();
      ms.push(performance.now() - t);
      if (keys.length !== 5) throw new Error(`listed ${keys.length} keys, expected 5`);
    }
    return percentile(ms, 50);
  };
  const owner = () => store.keys('apikeyowner:owner-1:');
  const scanned = () => store.keys('unindexed:owner-1:');
  const family = () => store.keys('ws:server:');

  await fill(SMALL);
  const small = { owner: await time(owner), family: await time(family), scan: await time(scanned, Math.min(ROUNDS, 10)) };
  const t0 = performance.now();
  await fill(BIG);
  const fillS = (performance.now() - t0) / 1000;
  const big = { owner: await time(owner), family: await time(family), scan: await time(scanned, Math.min(ROUNDS, 10)) };
  await store.close();

  console.log(`\nOne owner's listing (5 keys), p50, among unrelated keys (filled ${BIG} in ${fillS.toFixed(1)} s):`);
  const fmt = (ms) => `${ms.toFixed(3)} ms`;
  console.log(`| listing | among ${SMALL} | among ${BIG} | ratio |\n|---|---|---|---|`);
  console.log(`| owner (per-owner index) | ${fmt(small.owner)} | ${fmt(big.owner)} | ${(big.owner / small.owner).toFixed(2)} |`);
  console.log(`| family (per-family index) | ${fmt(small.family)} | ${fmt(big.family)} | ${(big.family / small.family).toFixed(2)} |`);
  console.log(`| prefix without index (SCAN) | ${fmt(small.scan)} | ${fmt(big.scan)} | ${(big.scan / small.scan).toFixed(0)} |`);

  // The migration: the same keys as a store of format 1 left them (no index), opened by this release.
  for (const pattern of ['idx:*', 'fidx:*', 'fexp:*']) for (const key of await raw.keys(`${PREFIX}${pattern}`)) await raw.del(key);
  await raw.set(`${PREFIX}format`, '1');
  await raw.del(`${PREFIX}keyindex`, `${PREFIX}logindex`);
  const t1 = performance.now();
  const upgraded = await RedisStorage.connect({ host: '127.0.0.1', port, keyPrefix: PREFIX, formatCheckMs: 1 });
  while (!(await upgraded.ownerIndexBuilt())) await new Promise((r) => setTimeout(r, 20));
  const buildS = (performance.now() - t1) / 1000;
  const after = await upgraded.keys('apikeyowner:owner-1:');
  if ((await upgraded.keys('ws:server:')).length !== 5) throw new Error('the build missed the family keys');
  await upgraded.close();
  console.log(
    `\nOne-time index build of a format-1 store of ${filled + 10} keys: ${buildS.toFixed(2)} s (then listed ${after.length} keys)`,
  );
} finally {
  raw.disconnect();
  server.kill();
}
