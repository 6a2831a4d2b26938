// ai-backend from the built package for bench/soak.mjs: configured by the JSON in argv[2], started
// with --expose-gc so the soak can ask, over IPC, for the heap after a full collection (what the
// server keeps, not what it has not collected yet). Answers { heapUsed, heapTotal, rss, spaces } to 'heap' and
// { snapshot: file } to 'snapshot'.
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { createServer } from 'ai-backend';

const config = JSON.parse(process.argv[2] ?? '{}');
const server = createServer({ port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'error' } }, ...config });
const addr = await server.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('message', (m) => {
  // A heap snapshot (in the working directory) to diff: what the server keeps between two points.
  if (m === 'snapshot') return void process.send({ snapshot: writeHeapSnapshot() });
  if (m !== 'heap') return;
  // Two passes: the first can leave weak-referenced and finalizable objects for the second.
  globalThis.gc();
  globalThis.gc();
  const { heapUsed, heapTotal, rss, external, arrayBuffers } = process.memoryUsage();
  // Committed bytes per V8 space: RSS that moves while the used heap does not is either V8 keeping
  // pages it committed (here) or malloc's (anon minus heapTotal).
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name, x.space_size]));
  process.send({ heapUsed, heapTotal, rss, external, arrayBuffers, spaces });
});
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
