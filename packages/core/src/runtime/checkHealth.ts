import type { Runtime } from './Runtime.js';

export interface HealthReport {
  status: 'ok' | 'degraded';
  uptime: number;
  timestamp: string;
  checks: Record<string, { ok: boolean; detail?: string; ms: number }>;
}

/** Run every registered probe with a short timeout; one slow dependency cannot hang /health. */
export async function checkHealth(runtime: Runtime, timeoutMs = 2000): Promise<HealthReport> {
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
