// CPU per upstream call of the client the AI providers use (services/ai/upstreamFetch.ts, Node's
// node:http on a keep-alive agent) against Node's global fetch, in one process and one run:
// 50 concurrent POSTs of a small chat body to a local node:http server answering a small JSON,
// 500 warm-up calls then 4,000 measured, each client twice, alternating. The CPU counted is the
// whole process's (the test server's share is the same for both). Usage (after `pnpm build`):
//   node bench/upstreamClientCpu.mjs
import http from 'node:http';
import { upstreamFetch } from '../packages/core/dist/services/ai/upstreamFetch.js';

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"x","choices":[{"message":{"content":"hi"}}]}');
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/v1/chat/completions`;
const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });

async function run(f, n) {
  let i = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (i++ < n)
        await (await f(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body })).json();
    }),
  );
}
for (const [name, f] of [
  ['global fetch', fetch],
  ['upstreamFetch (node:http)', upstreamFetch],
  ['global fetch', fetch],
  ['upstreamFetch (node:http)', upstreamFetch],
]) {
  await run(f, 500);
  const c0 = process.cpuUsage();
  await run(f, 4000);
  const c = process.cpuUsage(c0);
  console.log(`${name}: ${Math.round((c.user + c.system) / 4000)} µs CPU per call (Node ${process.version})`);
}
server.close();
process.exit(0);
