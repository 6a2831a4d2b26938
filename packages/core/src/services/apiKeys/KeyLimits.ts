import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { ApiKeyGrant } from '../../kernel/identity.js';
import { RateLimiter, type RateLimitDecision } from '../rateLimit/RateLimiter.js';

const MINUTE_MS = 60_000;
/** A concurrency counter lives at most this long from its creation, so slots leaked by a crashed instance come back. */
const CONCURRENCY_TTL_MS = 10 * 60_000;

export type KeyLimitKind = 'requests' | 'tokens' | 'concurrent';

/**
 * A key's rate limits, counted in the shared store (Redis when configured), so every instance
 * enforces one limit: requests per minute and tokens per minute through the existing
 * RateLimiter (fixed one-minute windows; its `toolCalls` counter counts tokens here), and
 * concurrent AI calls as one counter per key.
 */
export class KeyLimits {
  constructor(
    private readonly shared: Storage,
    private readonly logger: Logger,
    private readonly onRefusal: (kind: KeyLimitKind) => void = () => undefined,
  ) {}

  private limiter(grant: ApiKeyGrant): RateLimiter {
    return new RateLimiter(
      this.shared,
      { enabled: true, windowMs: MINUTE_MS, maxRequests: grant.requestsPerMinute ?? Number.MAX_SAFE_INTEGER, maxToolCalls: grant.tokensPerMinute ?? Number.MAX_SAFE_INTEGER },
      {
        logger: this.logger,
        prefix: 'rl:apikey:',
        names: { requests: 'key-requests', toolCalls: 'key-tokens' },
        kinds: [...(grant.requestsPerMinute ? (['requests'] as const) : []), ...(grant.tokensPerMinute ? (['toolCalls'] as const) : [])],
      },
    );
  }

  private refuse(kind: KeyLimitKind, message: string, limiter: RateLimiter | undefined, decision: RateLimitDecision | undefined, retryAfterSec: number): never {
    this.onRefusal(kind);
    const headers = limiter && decision ? limiter.headers([decision]) : { 'Retry-After': String(retryAfterSec) };
    throw new CoreError('RATE_LIMITED', message, { details: { reason: `key_${kind}_limit`, retryAfterSec }, headers });
  }

  /** One procedure call through the key: refused with 429 once the minute's requests are used up. */
  async request(grant: ApiKeyGrant): Promise<void> {
    if (!grant.requestsPerMinute) return;
    const limiter = this.limiter(grant);
    const d = await limiter.hit('requests', grant.id);
    if (d && !d.allowed) this.refuse('requests', `this API key's rate limit is ${d.limit} requests per minute; retry in ${d.resetSec} s`, limiter, d, d.resetSec);
  }

  /**
   * Admit an AI call while the minute's tokens are not used up. Tokens are counted when a call
   * ends (what it really used), so the call that crosses the limit finishes and the next is refused.
   */
  async admitTokens(grant: ApiKeyGrant): Promise<void> {
    if (!grant.tokensPerMinute) return;
    const limiter = this.limiter(grant);
    // One token for the admission itself: the limiter counts by adding.
    const d = await limiter.hit('toolCalls', grant.id, 1);
    if (d && !d.allowed) this.refuse('tokens', `this API key's limit of ${d.limit} tokens per minute is used up; retry in ${d.resetSec} s`, limiter, d, d.resetSec);
  }

  /** Count what a finished call used against the key's tokens per minute. */
  async countTokens(grant: ApiKeyGrant, tokens: number): Promise<void> {
    if (!grant.tokensPerMinute || tokens <= 0) return;
    await this.limiter(grant).hit('toolCalls', grant.id, Math.ceil(tokens));
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
      this.logger.warn('api keys: concurrency store unavailable; not limiting', { error: err instanceof Error ? err.message : String(err) });
      return async () => undefined;
    }
    const giveBack = () => this.shared.increment(key, -1, { min: 0 }).then(() => undefined, () => undefined);
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
