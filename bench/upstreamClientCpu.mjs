// CPU per upstream call of the client the AI providers and the /v1 pass-through use
// (services/ai/upstreamFetch.ts: undici's dispatcher `request` with a `Response` around its answer)
// against Node's global fetch and against a bare node:http request on a keep-alive agent (no
// `Response`: the least a node:http client can do), in one process and one run: 50 concurrent
// POSTs of a small chat body to a local node:http server answering a small JSON, 500 warm-up calls
// then 4,000 measured, each client three times, in turn. The CPU counted is the whole process's
// (the test server's share is the same for every client). Usage (after `pnpm build`):
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
const headers = { 'content-type': 'application/json', authorization: 'Bearer k' };
const agent = new http.Agent({ keepAlive: true });

/** node:http alone: the request on a keep-alive agent, the answer's chunks concatenated and parsed. */
const nodeHttp = () =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });

async function run(f, n) {
  let i = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (i++ < n) await f();
    }),
  );
}
const clients = {
  'global fetch': async () => (await fetch(url, { method: 'POST', headers, body })).json(),
  'node:http request, no Response': nodeHttp,
  'upstreamFetch (undici request)': async () => (await upstreamFetch(url, { method: 'POST', headers, body })).json(),
};
const results = Object.fromEntries(Object.keys(clients).map((k) => [k, []]));
for (let round = 0; round < 3; round++)
  for (const [name, f] of Object.entries(clients)) {
    await run(f, 500);
    const c0 = process.cpuUsage();
    await run(f, 4000);
    const c = process.cpuUsage(c0);
    results[name].push(Math.round((c.user + c.system) / 4000));
  }
console.log(`Node ${process.version}: CPU µs per call (whole process), three rounds each`);
for (const [name, r] of Object.entries(results)) console.log(`  ${name}: ${r.join(', ')}`);
server.close();
process.exit(0);
