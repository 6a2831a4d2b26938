import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { ApiKeyGrant } from '../../kernel/identity.js';
import { RateLimiter, type RateLimitDecision } from '../rateLimit/RateLimiter.js';
import { WindowLeases } from '../rateLimit/WindowLeases.js';

const MINUTE_MS = 60_000;
/** A concurrency counter lives at most this long from its creation, so slots leaked by a crashed instance come back. */
const CONCURRENCY_TTL_MS = 10 * 60_000;

export type KeyLimitKind = 'requests' | 'tokens' | 'concurrent';

/** A call's tokens held against its key's tokens per minute (KeyLimits.reserveTokens). */
export interface TokenReservation {
  /** Replace the held worst case with what the call used (the first of settle and release wins). */
  settle(used: number): Promise<void>;
  /** Give the held tokens back: the call ended without an answer. */
  release(): Promise<void>;
}

const NO_RESERVATION: TokenReservation = { settle: async () => undefined, release: async () => undefined };

/**
 * A key's rate limits, counted in the shared store (Redis when configured), so every instance
 * enforces one limit: requests per minute through the existing RateLimiter (fixed one-minute
 * windows), tokens per minute as a reservation in the same kind of window (reserveTokens), and
 * concurrent AI calls as one counter per key.
 */
export class KeyLimits {
  /** This process's leases on the keys' request counters (a limiter is built per call). */
  private readonly leases = new WindowLeases();

  constructor(
    private readonly shared: Storage,
    private readonly logger: Logger,
    private readonly onRefusal: (kind: KeyLimitKind) => void = () => undefined,
    /** The clock the one-minute windows are read from (CreateRuntimeOptions.clock). */
    private readonly now: () => number = Date.now,
  ) {}

  private limiter(grant: ApiKeyGrant): RateLimiter {
    return new RateLimiter(
      this.shared,
      {
        enabled: true,
        windowMs: MINUTE_MS,
        maxRequests: grant.requestsPerMinute ?? Number.MAX_SAFE_INTEGER,
        maxToolCalls: grant.tokensPerMinute ?? Number.MAX_SAFE_INTEGER,
      },
      {
        logger: this.logger,
        now: this.now,
        prefix: 'rl:apikey:',
        leases: this.leases,
        names: { requests: 'key-requests', toolCalls: 'key-tokens' },
        kinds: [...(grant.requestsPerMinute ? (['requests'] as const) : []), ...(grant.tokensPerMinute ? (['toolCalls'] as const) : [])],
      },
    );
  }

  private refuse(
    kind: KeyLimitKind,
    message: string,
    limiter: RateLimiter | undefined,
    decision: RateLimitDecision | undefined,
    retryAfterSec: number,
  ): never {
    this.onRefusal(kind);
    const headers = limiter && decision ? limiter.headers([decision]) : { 'Retry-After': String(retryAfterSec) };
    throw new CoreError('RATE_LIMITED', message, { details: { reason: `key_${kind}_limit`, retryAfterSec }, headers });
  }

  /** One procedure call through the key: refused with 429 once the minute's requests are used up. */
  async request(grant: ApiKeyGrant): Promise<void> {
    if (!grant.requestsPerMinute) return;
    const limiter = this.limiter(grant);
    const d = await limiter.hit('requests', grant.id);
    if (d && !d.allowed)
      this.refuse(
        'requests',
        `this API key's rate limit is ${d.limit} requests per minute; retry in ${d.resetSec} s`,
        limiter,
        d,
        d.resetSec,
      );
  }

  /**
   * Hold an AI call's worst case (`worst` tokens: its input bound plus maxTokens) against the key's
   * tokens per minute before the call starts, in the fixed minute it starts in. The hold is one
   * atomic add in the shared store, so concurrent calls on any instance can never together be
   * admitted past the limit; a call whose worst case alone exceeds it is refused outright. The
   * returned reservation replaces the worst case with what the call used (settle) or gives it back
   * (release), once, in the same minute's counter.
   */
  async reserveTokens(grant: ApiKeyGrant, worst: number): Promise<TokenReservation> {
    const limit = grant.tokensPerMinute;
    if (!limit) return NO_RESERVATION;
    const held = Math.max(1, Math.ceil(worst));
    if (held > limit) {
      this.onRefusal('tokens');
      throw new CoreError(
        'INVALID_PARAMS',
        `this call may use up to ${held} tokens, more than this API key's limit of ${limit} tokens per minute; lower maxTokens or the input`,
        {
          details: { reason: 'key_tokens_limit', requested: held, limit },
        },
      );
    }
    const now = this.now();
    const window = Math.floor(now / MINUTE_MS);
    const key = `rl:apikey:toolCalls:${grant.id}:${window}`;
    let count: number | null;
    try {
      count = await this.shared.increment(key, held, { ttlMs: MINUTE_MS });
    } catch (err) {
      // Same policy as the rate limiter: an unreachable counter store does not take calls down.
      this.logger.warn('api keys: token counter store unavailable; not limiting', {
        error: err instanceof Error ? err.message : String(err),
      });
      return NO_RESERVATION;
    }
    if (count !== null && count > limit) {
      await this.shared.increment(key, -held, { min: 0 }).catch(() => undefined);
      const resetSec = Math.max(1, Math.ceil(((window + 1) * MINUTE_MS - now) / 1000));
      this.refuse(
        'tokens',
        `this API key's limit of ${limit} tokens per minute is used up; retry in ${resetSec} s`,
        undefined,
        undefined,
        resetSec,
      );
    }
    let open = true;
    const adjust = async (delta: number): Promise<void> => {
      if (!open) return;
      open = false;
      if (delta === 0) return;
      // min 0: a counter that expired meanwhile is not driven below zero by the give-back.
      await this.shared.increment(key, delta, delta < 0 ? { min: 0 } : { ttlMs: MINUTE_MS }).catch(() => undefined);
    };
    return { settle: (used) => adjust(Math.ceil(Math.max(0, used)) - held), release: () => adjust(-held) };
  }

  /** Take one of the key's concurrent-call slots; the returned function gives it back (once). 429 when none is free. */
  async acquire(grant: ApiKeyGrant): Promise<() => Promise<void>> {
    const max = grant.concurrent;
    if (!max) return async () => undefined;
    const key = `apikeyconc:${grant.id}`;
    let n: number | null;
    try {
      n = await this.shared.increment(key, 1, { ttlMs: CONCURRENCY_TTL_MS });
    } catch (err) {
      // Same policy as the rate limiter: an unreachable counter store does not take calls down.
      this.logger.warn('api keys: concurrency store unavailable; not limiting', {
        error: err instanceof Error ? err.message : String(err),
      });
      return async () => undefined;
    }
    const giveBack = () =>
      this.shared.increment(key, -1, { min: 0 }).then(
        () => undefined,
        () => undefined,
      );
    if (n !== null && n > max) {
      await giveBack();
      this.refuse('concurrent', `this API key may run ${max} calls at once; retry when one ends`, undefined, undefined, 1);
    }
    let given = false;
    return async () => {
      if (given) return;
      given = true;
      await giveBack();
    };
  }
}
