// ai-backend from the built package for bench/soak.mjs: configured by the JSON in argv[2], started
// with --expose-gc so the soak can ask, over IPC, for the heap after a full collection (what the
// server keeps, not what it has not collected yet). Answers { heapUsed, heapTotal, rss, spaces, spacesUsed } to 'heap' (after two
// forced full collections), the same to 'heap:natural' (no collection forced: heapUsed is the heap after V8's own last full
// collection since the previous ask, absent if there was none) and { snapshot: file } to 'snapshot'.
import { GCProfiler, getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { createServer } from 'ai-backend';

const config = JSON.parse(process.argv[2] ?? '{}');
const server = createServer({ port: 0, host: '127.0.0.1', monitoring: { logging: { level: 'error' } }, ...config });
const addr = await server.start();
// Every collection V8 runs, with the heap before and after it: a full one's "after" is the heap after GC
// without forcing one (a forced full GC throws away optimized code whose maps died, and the server compiles
// it again: the soak would measure its own sampling).
let profiler = new GCProfiler();
profiler.start();
process.stdout.write(JSON.stringify({ url: addr.url }) + '\n');
process.on('message', (m) => {
  // A heap snapshot (in the working directory) to diff: what the server keeps between two points.
  if (m === 'snapshot') return void process.send({ snapshot: writeHeapSnapshot() });
  if (m !== 'heap' && m !== 'heap:natural') return;
  const gcs = profiler.stop().statistics;
  profiler = new GCProfiler();
  profiler.start();
  let heapUsed;
  if (m === 'heap') {
    // Two passes: the first can leave weak-referenced and finalizable objects for the second.
    globalThis.gc();
    globalThis.gc();
    heapUsed = process.memoryUsage().heapUsed;
  } else {
    heapUsed = gcs.findLast((g) => g.gcType === 'MarkSweepCompact')?.afterGC.heapStatistics.usedHeapSize;
  }
  const { heapTotal, rss, external, arrayBuffers } = process.memoryUsage();
  // Committed bytes per V8 space: RSS that moves while the used heap does not is either V8 keeping
  // pages it committed (here) or malloc's (anon minus heapTotal).
  const stats = getHeapSpaceStatistics();
  const spaces = Object.fromEntries(stats.map((x) => [x.space_name, x.space_size]));
  // And what each space holds (live after a forced GC; live and garbage since the last one without).
  const spacesUsed = Object.fromEntries(stats.map((x) => [x.space_name, x.space_used_size]));
  const fullGcs = gcs.filter((g) => g.gcType === 'MarkSweepCompact').length;
  process.send({ heapUsed, heapTotal, rss, external, arrayBuffers, spaces, spacesUsed, fullGcs });
});
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
