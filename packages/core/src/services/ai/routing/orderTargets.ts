import type { RouteStrategy } from '../../../config/sections/aiRoutes.js';

/** What a strategy knows of one available target when it orders them for a call. */
export interface TargetView<T> {
  target: T;
  weight: number;
  priority: number;
  /** Calls in flight on the deployment, across instances (least-busy). */
  busy: number;
  /** Recent latency in ms on this instance; undefined before the first answer (latency). */
  latencyMs: number | undefined;
  /** The larger of rpm and tpm used this minute as a share of the limit, 0 without limits (usage). */
  share: number;
}

/** Share of calls the latency strategy sends to a random target, so a recovered or slow-once target is measured again. */
export const LATENCY_EXPLORATION = 0.1;

/** Random order by weight, without replacement (Efraimidis–Spirakis: key u^(1/w), largest first). */
function weightedOrder<T>(views: TargetView<T>[], random: () => number): TargetView<T>[] {
  return views
    .map((v) => ({ v, key: random() ** (1 / v.weight) }))
    .sort((a, b) => b.key - a.key)
    .map((e) => e.v);
}

/** Ascending by `score`, ties in random order (so equal targets share the load). */
function byScore<T>(views: TargetView<T>[], score: (v: TargetView<T>) => number, random: () => number): TargetView<T>[] {
  return views
    .map((v) => ({ v, s: score(v), r: random() }))
    .sort((a, b) => a.s - b.s || a.r - b.r)
    .map((e) => e.v);
}

/**
 * The order in which one call tries a route's available targets: the first serves unless it
 * fails, the next ones are its retries.
 * - `weighted`: random by weight;
 * - `least-busy`: fewest calls in flight first (equal counts: the lower recent latency first);
 * - `latency`: lowest recent latency first, targets never measured before any measured one, and
 *   one call in ten (LATENCY_EXPLORATION) in random order, so a target that recovered is tried again;
 * - `usage`: lowest share of its rpm/tpm this minute first;
 * - `priority`: the lowest priority group first (random by weight within a group), the next
 *   groups after it: a group is used while it has capacity, since full or cooling targets are
 *   not among the available ones.
 */
export function orderTargets<T>(strategy: RouteStrategy, views: TargetView<T>[], random: () => number = Math.random): T[] {
  let ordered: TargetView<T>[];
  switch (strategy) {
    case 'weighted':
      ordered = weightedOrder(views, random);
      break;
    case 'least-busy':
      // Equal counts: the one that answered sooner lately (it frees its calls sooner).
      ordered = byScore(views, (v) => v.busy + Math.min(v.latencyMs ?? 0, 1e6) / 1e7, random);
      break;
    case 'latency':
      ordered =
        random() < LATENCY_EXPLORATION
          ? weightedOrder(
              views.map((v) => ({ ...v, weight: 1 })),
              random,
            )
          : byScore(views, (v) => v.latencyMs ?? -1, random);
      break;
    case 'usage':
      ordered = byScore(views, (v) => v.share, random);
      break;
    case 'priority': {
      const groups = [...new Set(views.map((v) => v.priority))].sort((a, b) => a - b);
      ordered = groups.flatMap((g) =>
        weightedOrder(
          views.filter((v) => v.priority === g),
          random,
        ),
      );
      break;
    }
  }
  return ordered.map((v) => v.target);
}
