import type { HealthProbe } from './Runtime.js';

export interface HealthReport {
  status: 'ok' | 'degraded';
  uptime: number;
  timestamp: string;
  /** Per dependency; `detail` and `ms` only in the administrator's view. */
  checks: Record<string, { ok: boolean; detail?: string; ms?: number }>;
}

/**
 * What a caller who is not an administrator may see of a health report: the status of each
 * dependency, never its detail text (which can name internal hosts and ports, e.g.
 * `connect ECONNREFUSED 10.0.0.5:6390`) or timings.
 */
export function healthFor(report: HealthReport, audience: 'admin' | 'public'): HealthReport {
  if (audience === 'admin') return report;
  const checks = Object.fromEntries(Object.entries(report.checks).map(([name, c]) => [name, { ok: c.ok }]));
  return { ...report, checks };
}

/** Run every registered probe with a short timeout; one slow dependency cannot hang /health. */
export async function checkHealth(runtime: { health: Map<string, HealthProbe> }, timeoutMs = 2000): Promise<HealthReport> {
  const checks: HealthReport['checks'] = {};
  await Promise.all(
    [...runtime.health].map(async ([name, probe]) => {
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<{ ok: boolean; detail: string }>((resolve) => {
          timer = setTimeout(() => resolve({ ok: false, detail: 'timed out' }), timeoutMs);
        });
        const r = await Promise.race([probe(), timeout]);
        checks[name] = { ...r, ms: Math.round(performance.now() - started) };
      } catch (err) {
        checks[name] = { ok: false, detail: err instanceof Error ? err.message : 'failed', ms: Math.round(performance.now() - started) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const ok = Object.values(checks).every((c) => c.ok);
  return { status: ok ? 'ok' : 'degraded', uptime: process.uptime(), timestamp: new Date().toISOString(), checks };
}
