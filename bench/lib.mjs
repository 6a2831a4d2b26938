import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import autocannon from 'autocannon';

/** Start a server script in its own process; resolves with its URL and pid once it prints it. */
export function startServer(script, args = [], env = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(env.NODE_FLAGS ? env.NODE_FLAGS.split(' ') : []), script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve({ ...JSON.parse(line), child, pid: child.pid, startMs: performance.now() - started, stop: () => stop(child) });
    });
    child.on('exit', (code) => reject(new Error(`${script} exited ${code}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', resolve);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

export async function rssMb(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  return Math.round(kb / 1024);
}

/** One autocannon run; returns req/s and latency percentiles (ms). */
export async function load({ url, method = 'GET', body, headers = {}, connections = 50, duration = 8, warmup = 2 }) {
  const opts = { url, method, body, headers: { 'content-type': 'application/json', ...headers }, connections };
  if (warmup) await autocannon({ ...opts, duration: warmup });
  const r = await autocannon({ ...opts, duration });
  const bad = r.non2xx + r.errors + r.timeouts;
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: bad, total: r.requests.total };
}

export function table(rows, baseline) {
  const lines = ['| scenario | req/s | p50 ms | p99 ms | errors | ratio to baseline |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    lines.push(`| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${baseline ? (r.rps / baseline.rps).toFixed(2) : '-'} |`);
  }
  return lines.join('\n');
}
