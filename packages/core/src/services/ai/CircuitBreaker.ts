import type { ProviderId } from '../../config/sections/ai.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';

export interface CircuitBreakerOptions {
  /** Retryable failures (429, 5xx, timeout, connection) within `windowMs` that open the breaker. */
  failureThreshold: number;
  /** How long an open breaker skips the provider, in ms; then one trial call decides. */
  cooldownMs: number;
  /** Window in which failures are counted, in ms. */
  windowMs: number;
  /**
   * How long the half-open trial call holds its claim, in ms (the upstream timeout): when it
   * ends neither way (the client cancelled it), another call becomes the trial after this.
   * Default `cooldownMs`.
   */
  trialMs?: number;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

/**
 * A per-provider circuit breaker whose state lives in the runtime's storage, so instances
 * sharing Redis share it. Keys: `aicb:<provider>:fails` (counter with the window as TTL),
 * `aicb:<provider>:open` (present while open, TTL = cooldown) and `aicb:<provider>:trial`
 * (present from opening until a success closes it: after the cooldown its presence means
 * half-open, where one failure re-opens at once). In half-open one call is the trial: it claims
 * `aicb:<provider>:trying` (compare-and-set, shared by instances); the others skip the provider
 * as if open until the trial decides, so a provider still down costs one call its timeout, not
 * every call that arrives meanwhile. A storage failure never fails a call: the breaker then
 * counts as closed.
 */
export class CircuitBreaker {
  constructor(
    private readonly storage: Storage,
    private readonly opts: CircuitBreakerOptions,
    private readonly logger: Logger,
  ) {}

  async state(provider: ProviderId): Promise<BreakerState> {
    try {
      if ((await this.storage.get(`aicb:${provider}:open`)) !== undefined) return 'open';
      return (await this.storage.get(`aicb:${provider}:trial`)) !== undefined ? 'half-open' : 'closed';
    } catch {
      return 'closed';
    }
  }

  /**
   * May a call with fallbacks try this provider now? Closed: `pass`. Open: `skip`. Half-open:
   * `trial` for the one call that claims the trial (across all instances sharing the storage),
   * `skip` for the others. The trial's call reports its verdict with success() or failure(), or,
   * when it ends without one (cancelled, a non-retryable error), hands the claim back with
   * endTrial().
   */
  async admit(provider: ProviderId): Promise<'pass' | 'trial' | 'skip'> {
    const state = await this.state(provider);
    if (state !== 'half-open') return state === 'closed' ? 'pass' : 'skip';
    try {
      return (await this.storage.compareAndSet(`aicb:${provider}:trying`, undefined, Date.now(), {
        ttlMs: this.opts.trialMs ?? this.opts.cooldownMs,
      }))
        ? 'trial'
        : 'skip';
    } catch {
      return 'pass';
    }
  }

  /** The trial call ended without a verdict: the next call becomes the trial. */
  async endTrial(provider: ProviderId): Promise<void> {
    try {
      await this.storage.delete(`aicb:${provider}:trying`);
    } catch {
      // best effort: the claim expires after trialMs
    }
  }

  async success(provider: ProviderId): Promise<void> {
    try {
      // Only touch storage when there is something to reset (the common case is a closed breaker).
      if ((await this.storage.get(`aicb:${provider}:trial`)) !== undefined) {
        await Promise.all([
          this.storage.delete(`aicb:${provider}:trial`),
          this.storage.delete(`aicb:${provider}:fails`),
          this.storage.delete(`aicb:${provider}:trying`),
        ]);
        this.logger.info('ai: circuit closed', { provider });
      }
    } catch {
      // best effort
    }
  }

  /**
   * Open now, whatever the count (the registry probe saw the provider fail): calls with
   * fallbacks skip it for `cooldownMs`, or `atLeastMs` when longer (the probe keeps it open
   * until its next round can confirm or close it); a probe failing again keeps it open.
   */
  async open(provider: ProviderId, reason: string, atLeastMs = 0): Promise<void> {
    try {
      const wasOpen = (await this.storage.get(`aicb:${provider}:open`)) !== undefined;
      await this.markOpen(provider, Math.max(this.opts.cooldownMs, atLeastMs));
      if (!wasOpen) this.logger.warn('ai: circuit opened', { provider, reason, cooldownMs: this.opts.cooldownMs });
    } catch {
      // best effort
    }
  }

  /** Close now and forget counted failures (the registry probe saw the provider recover). */
  async reset(provider: ProviderId): Promise<void> {
    try {
      const deleted = await Promise.all([
        this.storage.delete(`aicb:${provider}:open`),
        this.storage.delete(`aicb:${provider}:trial`),
        this.storage.delete(`aicb:${provider}:fails`),
        this.storage.delete(`aicb:${provider}:trying`),
      ]);
      if (deleted[0] || deleted[1]) this.logger.info('ai: circuit closed', { provider, by: 'probe' });
    } catch {
      // best effort
    }
  }

  /**
   * Open for `ttlMs`, then half-open (the trial marker outlives the open one); a trial claimed
   * before is void. Open is written first, so no reader sees half-open on the way.
   */
  private async markOpen(provider: ProviderId, ttlMs: number): Promise<void> {
    await this.storage.set(`aicb:${provider}:open`, Date.now(), { ttlMs });
    await this.storage.set(`aicb:${provider}:trial`, Date.now(), { ttlMs: ttlMs + 10 * this.opts.windowMs });
    await this.storage.delete(`aicb:${provider}:trying`);
  }

  async failure(provider: ProviderId, reason: string): Promise<void> {
    try {
      const halfOpen = (await this.state(provider)) === 'half-open';
      const fails = await this.storage.increment(`aicb:${provider}:fails`, 1, { ttlMs: this.opts.windowMs });
      if (halfOpen || (fails ?? 0) >= this.opts.failureThreshold) {
        await Promise.all([this.markOpen(provider, this.opts.cooldownMs), this.storage.delete(`aicb:${provider}:fails`)]);
        this.logger.warn('ai: circuit opened', { provider, reason, cooldownMs: this.opts.cooldownMs });
      }
    } catch {
      // best effort
    }
  }
}
