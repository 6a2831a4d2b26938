// The floor a shared store puts under one paced metered call on this machine, without our code:
// what the store itself takes for the round trips an exact metered call needs, each sent alone
// with both sides idle before it (as at 100 paced calls/s). PostgreSQL, three kinds of statement:
// - a round trip (`SELECT 1`): the payer decision's read;
// - a one-row UPDATE committed with synchronous_commit = off: the hold (docs/storage.md,
//   "Non-durable transactions");
// - the same UPDATE committed durably (the WAL flushed before the answer): the settlement, which
//   the client's answer waits for, so that an acknowledged call is charged even if PostgreSQL
//   crashes right after.
// Redis (the whole store): a metered call makes three round trips too (the reads, the hold's
// script, the settlement's script); timed here as a GET and an EVAL of a one-key script.
// Each sum is what that store adds to a paced metered call before any of our own work; issue 20's
// "≤ 2 ms p50 added" is compared with it and with the BYOK row of bench/ai.mjs in
// docs/performance.md. Uses a table of its own in database `test` and one Redis key, both removed
// at the end. Usage (PostgreSQL on 127.0.0.1:5432, Redis on 127.0.0.1:6379):
//   node bench/storeFloor.mjs [statements=400] [pauseMs=5]
import pg from 'pg';
import Redis from 'ioredis';

const n = Number(process.argv[2] ?? 400);
const pauseMs = Number(process.argv[3] ?? 5);
const table = `aib_pg_floor_${process.pid}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const redis = new Redis({ host: '127.0.0.1', port: Number(process.env.REDIS_PORT ?? 6379), lazyConnect: true });
await redis.connect();
const redisKey = `aib:floor:${process.pid}`;
const client = new pg.Client({
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'root',
  database: process.env.PGDATABASE ?? 'test',
});
await client.connect();
await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v bigint NOT NULL)`);
await client.query(`INSERT INTO ${table} VALUES (1, 0)`);

const SCRIPT = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
const kinds = {
  'PostgreSQL: round trip (SELECT 1), the read': () => client.query('SELECT 1'),
  'PostgreSQL: UPDATE, synchronous_commit = off, the hold': () =>
    client.query(`BEGIN; SET LOCAL synchronous_commit = off; UPDATE ${table} SET v = v + 1 WHERE id = 1; COMMIT`),
  'PostgreSQL: UPDATE, durable commit, the settlement': () => client.query(`UPDATE ${table} SET v = v + 1 WHERE id = 1`),
  'Redis: GET, the read': () => redis.get(redisKey),
  'Redis: EVAL of a one-key script, the hold': () => redis.eval(SCRIPT, 1, redisKey, 1),
  'Redis: EVAL of a one-key script, the settlement': () => redis.eval(SCRIPT, 1, redisKey, 1),
};
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const results = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
try {
  // Interleaved, so a change of load hits every kind alike; the first round warms up and is dropped.
  for (let round = 0; round < 2; round++) {
    for (const k of Object.keys(results)) results[k].length = 0;
    for (let i = 0; i < n; i++) {
      for (const [k, run] of Object.entries(kinds)) {
        await sleep(pauseMs);
        const t0 = process.hrtime.bigint();
        await run();
        results[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }
  }
} finally {
  await client.query(`DROP TABLE ${table}`);
  await client.end();
  await redis.del(redisKey);
  redis.disconnect();
}

console.log(`\n${n} of each, interleaved, ${pauseMs} ms idle before each\n`);
console.log('| statement | p50 ms | p90 ms |');
console.log('|---|---|---|');
const floor = { PostgreSQL: 0, Redis: 0 };
for (const [k, xs] of Object.entries(results)) {
  xs.sort((a, b) => a - b);
  floor[k.split(':')[0]] += pct(xs, 0.5);
  console.log(`| ${k} | ${pct(xs, 0.5).toFixed(3)} | ${pct(xs, 0.9).toFixed(3)} |`);
}
for (const [store, ms] of Object.entries(floor))
  console.log(`| ${store}, sum of the p50s: what it adds to one exact metered call at least | ${ms.toFixed(3)} | |`);
