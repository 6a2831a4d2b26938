import type { ResolvedConfig } from '../../../config/schema.js';
import type { RouteConfig } from '../../../config/sections/aiRoutes.js';
import { CoreError } from '../../../kernel/CoreError.js';
import type { Logger } from '../../../kernel/Logger.js';
import type { Storage } from '../../../kernel/Storage.js';
import type { Metrics } from '../../../observability/Metrics.js';
import { orderTargets, type TargetView } from './orderTargets.js';
import { RouteStats, type RouteReport } from './RouteStats.js';
import type { Routable, RouteOutcome, RouteSlot } from './RouteSlot.js';

/** Failures that cool a target down: the deployment, not the request, is the problem. */
const COOLING = new Set(['rate_limited', 'upstream_5xx', 'timeout', 'unreachable', 'connection_lost']);
/**
 * The one cooling failure that is the deployment's key's quota, not its health: a 429 to the
 * server's key. Calls with a caller's own key do not see such a cooldown (docs/ai.md#routes).
 */
const QUOTA = 'rate_limited';
/** Weight of the newest sample in a target's latency average. */
const LATENCY_ALPHA = 0.3;
/** In-flight counters expire after this (an instance that died mid-call leaks its counts only so long). */
const BUSY_TTL_MS = 10 * 60_000;
const MINUTE_MS = 60_000;
const PENDING_MS = 2_000;

const deployment = (t: Routable) => `${t.provider}/${t.model}`;

/**
 * Whose key a call's attempts go out with: the deployments' own (`server`, a platform-paid call)
 * or the caller's (`caller`, BYOK). A caller's key has none of the deployments' capacity: their
 * rpm/tpm and the cooldowns a 429 to the server's key left are not its limits, so it is planned
 * and admitted past them; a deployment that is down (5xx, timeout, unreachable) is down for it too.
 */
export type KeyedBy = 'server' | 'caller';

/** The store key of a deployment's cooldown as `keyedBy` sees it: every cooldown, or only those for its health. */
const coolKey = (t: Routable, keyedBy: KeyedBy) => `airt:${keyedBy === 'server' ? 'cool' : 'down'}:${deployment(t)}`;

/**
 * A call whose every target was skipped for its rpm (attemptLoop): RATE_LIMITED (429) with
 * Retry-After at the next minute, when the counts start over. Undefined otherwise.
 */
export function routeExhausted(attempts: ReadonlyArray<{ reason: string }>, now: number): CoreError | undefined {
  if (attempts.length === 0 || !attempts.every((a) => a.reason === 'rate_limited')) return undefined;
  const retryAfter = String(Math.max(1, Math.ceil((MINUTE_MS - (now % MINUTE_MS)) / 1000)));
  return new CoreError('RATE_LIMITED', `every target of this call is at its rpm limit this minute; retry after ${retryAfter} s`, {
    details: { reason: 'route_at_capacity', retryAfterSeconds: Number(retryAfter), attempts },
    headers: { 'Retry-After': retryAfter },
  });
}

/**
 * Routes at call time (docs/ai.md#routes): which targets a call tries and in what order, and
 * what the attempts leave behind. Shared through the store (`shared`, Redis in a cluster), so
 * every instance sees the same state: cooldowns (`airt:cool:<provider>/<model>`, the time they
 * end, with that TTL; `airt:down:…` the same for those that are not a 429, which BYOK calls see), calls in flight per deployment
 * (`airt:busy:…`) and each target's requests
 * and tokens this minute (`airt:rpm|tpm:<route>:<index>:<minute>`). Cooldowns are kept here too,
 * so a store that is down leaves this instance's own view (a store failure never fails a call:
 * capacity then goes unchecked). Latency is this instance's (a moving average per deployment).
 */
export class Routing {
  /** This instance's cooldowns per deployment: every one (`server`), and those for its health (`caller`). */
  private readonly localCool: Record<KeyedBy, Map<string, number>> = { server: new Map(), caller: new Map() };
  private readonly latency = new Map<string, number>();
  /**
   * least-busy: calls this instance planned onto a deployment and has not yet started there (the
   * hold runs in between), as their expiry times, so calls planned meanwhile count them as busy
   * too; an entry ends at the attempt or after PENDING_MS (a call refused before it).
   */
  private readonly pending = new Map<string, number[]>();
  readonly stats: RouteStats;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly store: Storage | undefined,
    private readonly logger: Logger,
    metrics?: Metrics,
    /** What minutes and cooldowns are counted by (createRuntime's `clock`: tests start a minute at will). */
    readonly now: () => number = Date.now,
  ) {
    this.stats = new RouteStats(config.ai.routes, metrics);
  }

  private route(name: string): RouteConfig {
    return this.config.ai.routes[name]!;
  }

  private async read(keys: string[]): Promise<unknown[]> {
    if (!this.store || keys.length === 0) return keys.map(() => undefined);
    try {
      return await this.store.getMany(keys);
    } catch (err) {
      this.logger.warn("ai: route state unreadable; using this instance's cooldowns", {
        error: err instanceof Error ? err.message : String(err),
      });
      return keys.map(() => undefined);
    }
  }

  private minuteKeys(name: string, index: number, now: number): { rpm: string; tpm: string } {
    const minute = Math.floor(now / MINUTE_MS);
    return { rpm: `airt:rpm:${name}:${index}:${minute}`, tpm: `airt:tpm:${name}:${index}:${minute}` };
  }

  /** Until when `t` cools down for calls keyed by `keyedBy` (ms since epoch), by this instance's view and the store's. */
  private coolUntil(t: Routable, stored: unknown, now: number, keyedBy: KeyedBy = 'server'): number {
    const local = this.localCool[keyedBy].get(deployment(t)) ?? 0;
    const shared = typeof stored === 'number' ? stored : 0;
    const until = Math.max(local, shared);
    return until > now ? until : 0;
  }

  /**
   * The targets one call of route `name` tries, in order: those not cooling down and below their
   * rpm/tpm this minute, ordered by the route's strategy, at most `retries + 1`. None available:
   * RATE_LIMITED (429) when every target is at its limit or throttled by its provider (cooling
   * after a 429, and not down), else UNAVAILABLE (503), both with Retry-After; `onEmpty: 'none'`
   * returns [] instead (a call with fallbacks goes on to them).
   * `keyedBy: 'caller'` (a BYOK call): rpm, tpm and the cooldowns of the server key's 429s do
   * not apply, so no target is full, `usage` sees every share as 0, and only a deployment that
   * is down is left out. `paid`: a provider one of whose targets the call must reach (the key
   * that pays a caller-keyed call is for it): when the `retries + 1` taken hold none, the last
   * one taken gives way to its first.
   */
  async plan<T extends Routable>(
    name: string,
    admitted: T[],
    onEmpty: 'throw' | 'none',
    keyedBy: KeyedBy = 'server',
    paid?: string,
  ): Promise<T[]> {
    const route = this.route(name);
    const now = this.now();
    const byServer = keyedBy === 'server';
    const keys: string[] = [];
    for (const t of admitted) {
      const { rpm, tpm } = this.minuteKeys(name, t.route!.index, now);
      // The server's plan also reads whether a cooling target is down, or only throttled (a 429 to its key).
      keys.push(coolKey(t, keyedBy), rpm, tpm, `airt:busy:${deployment(t)}`, coolKey(t, 'caller'));
    }
    const values = await this.read(keys);
    const views: TargetView<T>[] = [];
    let soonest = Infinity;
    /** Targets left out for their key's quota: rpm/tpm used up this minute, or cooling after a 429 and not down. */
    let full = 0;
    admitted.forEach((t, i) => {
      const conf = route.targets[t.route!.index]!;
      const [cool, rpmUsed, tpmUsed, busy, down] = values.slice(i * 5, i * 5 + 5).map((v) => (typeof v === 'number' ? v : 0)) as [
        number,
        number,
        number,
        number,
        number,
      ];
      const until = this.coolUntil(t, cool, now, keyedBy);
      if (until > 0) {
        soonest = Math.min(soonest, until);
        if (byServer && this.coolUntil(t, down, now, 'caller') === 0) full++;
        return;
      }
      const share = byServer ? Math.max(conf.rpm ? rpmUsed / conf.rpm : 0, conf.tpm ? tpmUsed / conf.tpm : 0) : 0;
      if (share >= 1) {
        full++;
        soonest = Math.min(soonest, (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS);
        return;
      }
      views.push({
        target: { ...t, route: { ...t.route!, planned: true } },
        weight: conf.weight,
        priority: conf.priority,
        busy: Math.max(0, busy) + this.pendingCount(deployment(t), now),
        latencyMs: this.latency.get(deployment(t)),
        share,
      });
    });
    if (views.length === 0) {
      if (onEmpty === 'none') return [];
      const retryAfter = String(Math.max(1, Math.ceil((soonest - now) / 1000)));
      if (full === admitted.length) {
        throw new CoreError(
          'RATE_LIMITED',
          `every target of route ${name} is at its rpm/tpm limit this minute or rate limited by its provider; retry after ${retryAfter} s`,
          {
            details: { reason: 'route_at_capacity', route: name, retryAfterSeconds: Number(retryAfter) },
            headers: { 'Retry-After': retryAfter },
          },
        );
      }
      throw new CoreError('UNAVAILABLE', `every target of route ${name} is cooling down or at its limit; retry after ${retryAfter} s`, {
        details: { reason: 'route_unavailable', route: name, retryAfterSeconds: Number(retryAfter) },
        headers: { 'Retry-After': retryAfter },
      });
    }
    const ordered = orderTargets(route.strategy, views);
    const order = ordered.slice(0, route.retries + 1);
    const mustReach = paid === undefined || order.some((t) => t.provider === paid) ? undefined : ordered.find((t) => t.provider === paid);
    if (mustReach) order[order.length - 1] = mustReach;
    if (route.strategy === 'least-busy') {
      const id = deployment(order[0]!);
      this.pending.set(id, [...(this.pending.get(id) ?? []), now + PENDING_MS]);
    }
    return order;
  }

  private pendingCount(id: string, now: number): number {
    const list = this.pending.get(id);
    if (!list) return 0;
    const live = list.filter((until) => until > now);
    if (live.length !== list.length) this.pending.set(id, live);
    return live.length;
  }

  /** A planned call was planned again (planForStoredKey): its first plan's target is no longer pending. */
  unplan(t: Routable): void {
    if (t.route && this.route(t.route.name).strategy === 'least-busy') this.unpend(deployment(t));
  }

  /** The planned call reached its attempt (or was skipped): no longer pending. */
  private unpend(id: string): void {
    const list = this.pending.get(id);
    if (list && list.length > 0) list.shift();
  }

  /**
   * Just before an attempt on a route target: 'pass', or why it is skipped ('cooling_down';
   * 'rate_limited' when its rpm is used up this minute: the request is counted atomically, so
   * instances together never pass more than rpm). A pass counts the call in flight.
   * `serverKeyed`: the attempt goes out with the deployment's own key; one with a caller's key
   * uses none of the deployment's rpm, so it is not counted there, and is held back only by a
   * cooldown for the deployment's health (KeyedBy).
   */
  async admit(t: Routable, serverKeyed = true): Promise<'pass' | 'cooling_down' | 'rate_limited'> {
    const slot = t.route!;
    const conf = this.route(slot.name).targets[slot.index]!;
    const route = this.route(slot.name);
    const now = this.now();
    const keyedBy: KeyedBy = serverKeyed ? 'server' : 'caller';
    if (route.strategy === 'least-busy' && slot.planned) this.unpend(deployment(t));
    if (!slot.planned) {
      const [cool] = await this.read([coolKey(t, keyedBy)]);
      if (this.coolUntil(t, cool, now, keyedBy) > 0) return 'cooling_down';
    } else if (this.coolUntil(t, undefined, now, keyedBy) > 0) return 'cooling_down';
    if (this.store) {
      try {
        if (conf.rpm && serverKeyed) {
          const key = this.minuteKeys(slot.name, slot.index, now).rpm;
          const n = await this.store.increment(key, 1, { ttlMs: 2 * MINUTE_MS });
          if ((n ?? 0) > conf.rpm) {
            await this.store.increment(key, -1, { min: 0 });
            this.stats.skipped(slot, 'rate_limited');
            return 'rate_limited';
          }
        }
        if (route.strategy === 'least-busy') await this.store.increment(`airt:busy:${deployment(t)}`, 1, { ttlMs: BUSY_TTL_MS });
      } catch (err) {
        this.logger.warn('ai: route counters unavailable; capacity unchecked', {
          route: slot.name,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    this.stats.started(slot);
    return 'pass';
  }

  /**
   * An admitted target was not tried after all (circuit open, no stored key): no longer in flight,
   * and the request admit counted in its rpm (`serverKeyed`, as admit was told) handed back: no
   * request reached the deployment, so it must not use up the deployment's minute.
   */
  async release(t: Routable, serverKeyed = true): Promise<void> {
    const slot = t.route!;
    const route = this.route(slot.name);
    this.stats.released(slot);
    if (!this.store) return;
    if (serverKeyed && route.targets[slot.index]?.rpm) {
      const key = this.minuteKeys(slot.name, slot.index, this.now()).rpm;
      await this.store.increment(key, -1, { min: 0 }).catch(() => undefined);
    }
    if (route.strategy === 'least-busy') await this.store.increment(`airt:busy:${deployment(t)}`, -1, { min: 0 }).catch(() => undefined);
  }

  /**
   * An admitted attempt ended: in-flight count, latency, statistics, and a cooldown when the
   * deployment failed. `serverKeyed`: the attempt went out with the deployment's own key; a
   * caller's key failing (its own rate limit) says nothing of the deployment and cools nothing.
   */
  async finished(t: Routable, outcome: RouteOutcome, ms: number, serverKeyed = true): Promise<void> {
    const slot = t.route!;
    const route = this.route(slot.name);
    const id = deployment(t);
    this.stats.finished(slot, outcome, ms);
    if (outcome.ok) {
      const prev = this.latency.get(id);
      this.latency.set(id, prev === undefined ? ms : prev + LATENCY_ALPHA * (ms - prev));
    }
    const failed = outcome.ok || !serverKeyed ? undefined : outcome;
    const coolMs = failed && COOLING.has(failed.reason) ? (failed.retryAfterSeconds ?? route.cooldownSec) * 1000 : 0;
    // A 429 is the server key's quota (every cooldown); any other cooling failure is the deployment's health (both).
    const views: KeyedBy[] = failed?.reason === QUOTA ? ['server'] : ['server', 'caller'];
    if (failed && coolMs > 0) {
      const until = this.now() + coolMs;
      for (const v of views) this.localCool[v].set(id, Math.max(until, this.localCool[v].get(id) ?? 0));
      // A timeout says as much about latency as a slow answer: the latency strategy moves away too.
      if (failed.reason === 'timeout') this.latency.set(id, Math.max(this.latency.get(id) ?? 0, ms));
      this.logger.info('ai: route target cooling down', { route: slot.name, target: id, reason: failed.reason, seconds: coolMs / 1000 });
    }
    if (!this.store) return;
    try {
      if (route.strategy === 'least-busy') await this.store.increment(`airt:busy:${id}`, -1, { min: 0 });
      if (coolMs > 0) for (const v of views) await this.store.set(coolKey(t, v), this.now() + coolMs, { ttlMs: Math.ceil(coolMs) });
    } catch (err) {
      this.logger.warn('ai: route state not written; this instance keeps the cooldown', {
        route: slot.name,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** Tokens a route target's call used, for its tpm (counted across instances). */
  async used(slot: RouteSlot, tokens: number): Promise<void> {
    this.stats.tokens(slot, tokens);
    const conf = this.route(slot.name).targets[slot.index];
    if (!conf?.tpm && this.route(slot.name).strategy !== 'usage') return;
    if (!this.store || tokens <= 0) return;
    try {
      await this.store.increment(this.minuteKeys(slot.name, slot.index, this.now()).tpm, Math.ceil(tokens), { ttlMs: 2 * MINUTE_MS });
    } catch {
      // capacity then goes unchecked for this minute; the call itself is settled
    }
  }

  /** Every route with each target's share of calls, latency, errors, cooldown and headroom this minute (console). */
  async report(): Promise<RouteReport[]> {
    const now = this.now();
    const keys: string[] = [];
    const targets: Array<{ name: string; index: number; provider: string; model: string }> = [];
    for (const [name, r] of Object.entries(this.config.ai.routes)) {
      r.targets.forEach((t, index) => {
        const slash = t.model.indexOf('/');
        const target = { name, index, provider: t.model.slice(0, slash), model: t.model.slice(slash + 1) };
        targets.push(target);
        const { rpm, tpm } = this.minuteKeys(name, index, now);
        keys.push(`airt:cool:${deployment(target)}`, rpm, tpm);
      });
    }
    const values = await this.read(keys);
    const live = targets.map((t, i) => {
      const [cool, rpm, tpm] = values.slice(i * 3, i * 3 + 3).map((v) => (typeof v === 'number' ? v : 0)) as [number, number, number];
      const until = this.coolUntil(t, cool, now);
      return { coolingDownUntil: until > 0 ? new Date(until).toISOString() : null, rpmUsed: rpm, tpmUsed: tpm };
    });
    return this.stats.report(live);
  }
}
