import type { RouteConfig } from '../../../config/sections/aiRoutes.js';
import type { Metrics } from '../../../observability/Metrics.js';
import type { RouteOutcome, RouteSlot } from './RouteSlot.js';

/** One target of a route as the console shows it. */
export interface RouteTargetReport {
  /** `provider/model` as configured. */
  model: string;
  weight: number;
  priority: number;
  rpm: number | null;
  tpm: number | null;
  /** Calls this instance sent to the target since start, and their share of the route's calls. */
  calls: number;
  share: number;
  errors: number;
  /** Attempts skipped because the target's rpm was used up. */
  rateLimited: number;
  avgLatencyMs: number | null;
  inFlight: number;
  tokens: number;
  /** Shared state: until when it cools down (null: it does not), and what it used this minute. */
  coolingDownUntil: string | null;
  rpmUsed: number;
  tpmUsed: number;
  /** What is left of its rpm/tpm this minute (null: no limit). */
  rpmHeadroom: number | null;
  tpmHeadroom: number | null;
}

export interface RouteReport {
  name: string;
  strategy: RouteConfig['strategy'];
  retries: number;
  cooldownSec: number;
  targets: RouteTargetReport[];
}

interface Counts {
  calls: number;
  errors: number;
  rateLimited: number;
  totalMs: number;
  inFlight: number;
  tokens: number;
}

/**
 * This instance's figures per route target (console) and the route metrics. Labels are the
 * configured route names and target models only, so their number is bounded by the config.
 */
export class RouteStats {
  private readonly counts = new Map<string, Counts[]>();

  constructor(
    private readonly routes: Record<string, RouteConfig>,
    private readonly metrics?: Metrics,
  ) {
    for (const [name, r] of Object.entries(routes))
      this.counts.set(
        name,
        r.targets.map(() => ({ calls: 0, errors: 0, rateLimited: 0, totalMs: 0, inFlight: 0, tokens: 0 })),
      );
  }

  private of(slot: RouteSlot): Counts | undefined {
    return this.counts.get(slot.name)?.[slot.index];
  }

  private label(slot: RouteSlot): string {
    return this.routes[slot.name]!.targets[slot.index]!.model;
  }

  started(slot: RouteSlot): void {
    const c = this.of(slot);
    if (c) c.inFlight++;
  }

  released(slot: RouteSlot): void {
    const c = this.of(slot);
    if (c) c.inFlight = Math.max(0, c.inFlight - 1);
  }

  skipped(slot: RouteSlot, reason: 'rate_limited'): void {
    const c = this.of(slot);
    if (c) c.rateLimited++;
    this.metrics?.routeAttempt(slot.name, this.label(slot), reason);
  }

  finished(slot: RouteSlot, outcome: RouteOutcome, ms: number): void {
    const c = this.of(slot);
    if (!c) return;
    c.inFlight = Math.max(0, c.inFlight - 1);
    c.calls++;
    c.totalMs += ms;
    if (!outcome.ok) c.errors++;
    this.metrics?.routeAttempt(slot.name, this.label(slot), outcome.ok ? 'ok' : outcome.reason);
  }

  tokens(slot: RouteSlot, tokens: number): void {
    const c = this.of(slot);
    if (c) c.tokens += tokens;
  }

  /** The routes with this instance's counts and the shared state (`live`, in config order of all targets). */
  report(live: Array<{ coolingDownUntil: string | null; rpmUsed: number; tpmUsed: number }>): RouteReport[] {
    let i = 0;
    return Object.entries(this.routes).map(([name, r]) => {
      const counts = this.counts.get(name)!;
      const total = counts.reduce((n, c) => n + c.calls, 0);
      return {
        name,
        strategy: r.strategy,
        retries: r.retries,
        cooldownSec: r.cooldownSec,
        targets: r.targets.map((t, index) => {
          const c = counts[index]!;
          const s = live[i++]!;
          return {
            model: t.model,
            weight: t.weight,
            priority: t.priority,
            rpm: t.rpm ?? null,
            tpm: t.tpm ?? null,
            calls: c.calls,
            share: total ? c.calls / total : 0,
            errors: c.errors,
            rateLimited: c.rateLimited,
            avgLatencyMs: c.calls ? Math.round(c.totalMs / c.calls) : null,
            inFlight: c.inFlight,
            tokens: c.tokens,
            ...s,
            rpmHeadroom: t.rpm ? Math.max(0, t.rpm - s.rpmUsed) : null,
            tpmHeadroom: t.tpm ? Math.max(0, t.tpm - s.tpmUsed) : null,
          };
        }),
      };
    });
  }
}
