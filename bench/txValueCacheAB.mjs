// The guess cache of the networked stores (storage/sql/TxValueCache.ts) under a metered call's
// pattern, two checkouts in one run: per call, the user's seven rows guessed and remembered and two
// new keys of the call's own (its hold, its finished record), with the cache full (10,000 keys).
// Each checkout's source is loaded with tsx, so no build is needed; rounds alternate A B / B A.
//   node --import tsx bench/txValueCacheAB.mjs <dirA> <dirB> [rounds=6] [calls per round=20000]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dirA, dirB, rounds = '6', perRound = '20000'] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: node --import tsx bench/txValueCacheAB.mjs <dirA> <dirB> [rounds] [calls per round]');
const load = async (dir) =>
  (await import(pathToFileURL(path.resolve(dir, 'packages/core/src/storage/sql/TxValueCache.ts')).href)).TxValueCache;
const builds = { A: new (await load(dirA))(), B: new (await load(dirB))() };
const hot = Array.from({ length: 7 }, (_, i) => `acct:user-${i}`);
const next = { A: 0, B: 0 };
const calls = (name, n) => {
  const cache = builds[name];
  for (let i = next[name]; i < next[name] + n; i++) {
    for (const k of hot) {
      cache.guess(k, 0);
      cache.remember(k, { value: 'v', version: '1' }, undefined, 0);
    }
    cache.remember(`hold:${i}`, { value: undefined, version: undefined }, undefined, 0);
    cache.remember(`holddone:${i}`, { value: 'x', version: '1' }, undefined, 0);
  }
  next[name] += n;
};
for (const name of ['A', 'B']) calls(name, 20_000); // full, and warmed
const us = { A: [], B: [] };
for (let r = 0; r < Number(rounds); r++)
  for (const name of r % 2 ? ['B', 'A'] : ['A', 'B']) {
    const c = process.cpuUsage();
    calls(name, Number(perRound));
    const d = process.cpuUsage(c);
    us[name].push((d.user + d.system) / Number(perRound));
  }
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`## TxValueCache, a metered call's pattern at capacity (${rounds} rounds x ${perRound} calls; node ${process.version})\n`);
console.log(`| | A µs CPU per call | B | B / A |\n|---|---|---|---|`);
console.log(`| median of rounds | ${median(us.A).toFixed(2)} | ${median(us.B).toFixed(2)} | ${(median(us.B) / median(us.A)).toFixed(3)} |`);
