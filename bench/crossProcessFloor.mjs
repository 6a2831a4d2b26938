// The floor under every paced latency in bench/ai.mjs: what one message to another process and
// its answer cost on this machine, when both sides were idle before it (as at 100 paced calls/s).
// A small echo server in another process (TCP on 127.0.0.1, and a Unix socket), one message at a
// time with a pause between them; for each, the round trip (wall) and this process's CPU for it.
// The same against an echo server in this process, where no other process has to wake up.
// Usage: node bench/crossProcessFloor.mjs [messages=2000] [pauseMs=5]
import net from 'node:net';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const messages = Number(process.argv[2] ?? 2000);
const pauseMs = Number(process.argv[3] ?? 5);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const ECHO = `const net = require('node:net');
const s = net.createServer((c) => { c.setNoDelay(true); c.on('data', (d) => c.write(d)); });
s.listen(process.argv[1] === 'tcp' ? { port: 0, host: '127.0.0.1' } : { path: process.argv[1] }, () => process.stdout.write(JSON.stringify(s.address()) + '\\n'));`;

function child(where) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', ECHO, where], { stdio: ['ignore', 'pipe', 'inherit'] });
    p.stdout.once('data', (d) => resolve({ address: JSON.parse(String(d)), stop: () => p.kill() }));
  });
}

function inProcess() {
  return new Promise((resolve) => {
    const s = net.createServer((c) => {
      c.setNoDelay(true);
      c.on('data', (d) => c.write(d));
    });
    s.listen({ port: 0, host: '127.0.0.1' }, () => resolve({ address: s.address(), stop: () => s.close() }));
  });
}

async function measure(connectTo) {
  const sock = net.connect(connectTo);
  sock.setNoDelay(true);
  await new Promise((r) => sock.once('connect', r));
  const wall = [];
  const cpu = [];
  const payload = Buffer.alloc(200, 97); // about a small query or request line
  for (let i = 0; i < messages; i++) {
    await sleep(pauseMs);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((resolve) => {
      let got = 0;
      const onData = (d) => {
        got += d.length;
        if (got >= payload.length) {
          sock.off('data', onData);
          resolve();
        }
      };
      sock.on('data', onData);
      sock.write(payload);
    });
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  sock.destroy();
  const p = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)];
  return { p50: p(wall, 0.5), p99: p(wall, 0.99), cpu: p(cpu, 0.5) };
}

const dir = await mkdtemp(join(tmpdir(), 'aib-floor-'));
const rows = [];
const local = await inProcess();
rows.push(['echo server in this process (TCP 127.0.0.1)', await measure({ port: local.address.port, host: '127.0.0.1' })]);
local.stop();
const tcp = await child('tcp');
rows.push(['echo server in another process (TCP 127.0.0.1)', await measure({ port: tcp.address.port, host: '127.0.0.1' })]);
tcp.stop();
const unix = await child(join(dir, 'echo.sock'));
rows.push(['echo server in another process (Unix socket)', await measure({ path: join(dir, 'echo.sock') })]);
unix.stop();
await rm(dir, { recursive: true, force: true });

console.log(
  `\n## One message and its answer, both sides idle before it (${messages} messages, ${pauseMs} ms apart, node ${process.version})\n`,
);
console.log("| peer | round trip p50 ms | p99 ms | this process's CPU per round trip, p50 ms |");
console.log('|---|---|---|---|');
for (const [name, r] of rows) console.log(`| ${name} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.cpu.toFixed(3)} |`);
