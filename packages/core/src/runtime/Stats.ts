import type { TransportName } from '../trpc/context.js';

const SAMPLE_SIZE = 512;

interface Entry {
  count: number;
  errors: number;
  /** Ring buffer of recent latencies (ms) for percentiles. */
  samples: Float64Array;
  next: number;
}

/** Request counts, errors and latency percentiles per procedure and entry point since start. */
export class Stats {
  readonly startedAt = Date.now();
  private readonly entries = new Map<string, Entry>();

  record(transport: TransportName, path: string, ms: number, failed: boolean): void {
    const key = `${transport} ${path}`;
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { count: 0, errors: 0, samples: new Float64Array(SAMPLE_SIZE), next: 0 }));
    e.count++;
    if (failed) e.errors++;
    e.samples[e.next++ % SAMPLE_SIZE] = ms;
  }

  snapshot() {
    const procedures = [...this.entries].map(([key, e]) => {
      const [transport, path] = key.split(' ') as [string, string];
      const n = Math.min(e.count, SAMPLE_SIZE);
      const sorted = Array.from(e.samples.subarray(0, n)).sort((a, b) => a - b);
      const pct = (p: number) => (n ? Number(sorted[Math.min(n - 1, Math.floor((p / 100) * n))]!.toFixed(3)) : 0);
      return { transport, path, count: e.count, errors: e.errors, latencyMs: { p50: pct(50), p90: pct(90), p99: pct(99) } };
    });
    const total = procedures.reduce((s, p) => s + p.count, 0);
    const errors = procedures.reduce((s, p) => s + p.errors, 0);
    return { since: new Date(this.startedAt).toISOString(), total, errors, procedures };
  }

  reset(): void {
    this.entries.clear();
  }
}
