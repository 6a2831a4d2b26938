import { createHash } from 'node:crypto';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import { WindowLeases, windowAt } from './WindowLeases.js';

/** What is counted: every /mcp request, or each tool call (any entry point). */
export type RateLimitKind = 'requests' | 'toolCalls';

/** `mcp.rateLimiting`, resolved. */
export interface RateLimitSettings {
  enabled: boolean;
  /** Window length in ms (fixed windows aligned to the epoch). */
  windowMs: number;
  /** /mcp requests per caller and window. */
  maxRequests: number;
  /** Tool calls per caller and window. */
  maxToolCalls: number;
}

export interface RateLimiterOptions {
  /** Warned when the counter store cannot be reached (the limiter then lets requests through). */
  logger?: Pick<Logger, 'warn'>;
  /** Storage key prefix. Default 'rl:'. */
  prefix?: string;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
  /**
   * Policy names in the RateLimit headers, per kind. Default "requests" and "tool-calls"; the
   * OAuth endpoints use one limiter per endpoint group ("oauth-token", ...).
   */
  names?: Partial<Record<RateLimitKind, string>>;
  /** The kinds this limiter counts (listed in RateLimit-Policy). Default both. */
  kinds?: RateLimitKind[];
  /** Told of every refusal (metrics). */
  onRefusal?: (kind: RateLimitKind) => void;
  /**
   * This process's leases on the shared counters. Default: the limiter's own; limiters built per
   * call over the same counters (KeyLimits) pass one they share.
   */
  leases?: WindowLeases;
  /**
   * What a hit gets when the counter store fails to count it. 'let-through' (default): the hit is
   * let through, limits fail open, when the counters have a store of their own (a Redis beside the
   * store) whose outage should not take the service down. 'refuse': the failure is thrown
   * (UNAVAILABLE), for counters kept in the PostgreSQL store every call needs: a hung PostgreSQL
   * answers the count after its query timeout, and a call let through then waited that timeout
   * again for its own first query (1.6 s for a 503 with the default 0.8 s), where refusing answers
   * the 503 it was heading for one timeout sooner. Either way the hits of the next STORE_RETRY_MS
   * are let through without asking the store, so service resumes as soon as it answers again.
   */
  storeOutage?: 'let-through' | 'refuse';
}

export interface RateLimitDecision {
  allowed: boolean;
  kind: RateLimitKind;
  /** The quota of this kind per window. */
  limit: number;
  /** Units left in the window after this hit; 0 when refused. */
  remaining: number;
  /** Seconds until the window ends (at least 1): the Retry-After value when refused. */
  resetSec: number;
}

/** Policy names in the RateLimit / RateLimit-Policy headers. */
const POLICY: Record<RateLimitKind, string> = { requests: 'requests', toolCalls: 'tool-calls' };
const SAFE_SUB = /^[\w.@+:-]{1,128}$/;
const UNAVAILABLE_WARN_MS = 10_000;
/**
 * After the store failed a count, hits are let through without asking it for this long: they
 * would be let through anyway (limits fail open), and asking a hung store costs every request
 * its query timeout before the call goes on (0.8 s each with PostgreSQL's default, ahead of the
 * call's own failure). The next hit after it asks the store again.
 */
const STORE_RETRY_MS = 1_000;

/**
 * The `storeOutage` for counters kept in `counters` in front of calls that need `calls`: 'refuse'
 * when they are the same PostgreSQL store (a hang of it costs each call its query timeout; let
 * through, a call would wait it twice), 'let-through' otherwise.
 */
export function storeOutageFor(counters: Storage, calls: Storage): 'refuse' | 'let-through' {
  return counters === calls && counters.kind === 'postgres' ? 'refuse' : 'let-through';
}

/**
 * Who a counter belongs to: the authenticated subject, else the client address. Unusual or long
 * subjects are hashed so keys stay short and printable.
 */
export function rateLimitCaller(identity: { sub: string } | null | undefined, ip: string): string {
  if (identity)
    return SAFE_SUB.test(identity.sub)
      ? `u:${identity.sub}`
      : `uh:${createHash('sha256').update(identity.sub).digest('base64url').slice(0, 32)}`;
  return `ip:${ip}`;
}

/**
 * Fixed-window counters in core Storage, keyed by kind, caller and window number, counted in
 * leases (WindowLeases): a hot caller's hits mostly spend units this process already counted, so
 * they make no store request. Every increment is atomic in every backend (a Lua script on Redis)
 * and includes what is leased, so servers sharing a store enforce one limit between them.
 *
 * When the store cannot be reached the request is let through and a warning logged (at most
 * every 10 s): an outage of the counter store should not take the whole service down. Counters in
 * the PostgreSQL store itself refuse instead (`storeOutage`): that outage is the service's.
 */
export class RateLimiter {
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly names: Record<RateLimitKind, string>;
  private readonly kinds: RateLimitKind[];
  private readonly leases: WindowLeases;
  private lastWarn = 0;
  /** Until when hits skip the store after it failed (STORE_RETRY_MS). */
  private storeDownUntil = 0;

  constructor(
    private readonly storage: Storage,
    readonly settings: RateLimitSettings,
    private readonly opts: RateLimiterOptions = {},
  ) {
    this.prefix = opts.prefix ?? 'rl:';
    this.now = opts.now ?? Date.now;
    this.names = { ...POLICY, ...opts.names };
    this.kinds = opts.kinds ?? ['requests', 'toolCalls'];
    this.leases = opts.leases ?? new WindowLeases();
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  limitOf(kind: RateLimitKind): number {
    return kind === 'requests' ? this.settings.maxRequests : this.settings.maxToolCalls;
  }

  /**
   * Count `units` for a caller and say whether they fit in the window. Null when limiting is off
   * or the store is unreachable (nothing to enforce, nothing to report); with `storeOutage:
   * 'refuse'` a count the store failed throws its UNAVAILABLE instead.
   */
  async hit(kind: RateLimitKind, caller: string, units = 1): Promise<RateLimitDecision | null> {
    if (!this.settings.enabled || units <= 0) return null;
    const now = this.now();
    const { windowMs } = this.settings;
    const { window, resetSec } = windowAt(now, windowMs);
    const limit = this.limitOf(kind);
    if (now < this.storeDownUntil) return null;
    let counted: { allowed: boolean; used: number };
    try {
      counted = await this.leases.count(this.storage, `${this.prefix}${kind}:${caller}`, window, windowMs, units, limit);
    } catch (err) {
      this.storeDownUntil = this.now() + STORE_RETRY_MS;
      if (this.opts.storeOutage === 'refuse')
        throw err instanceof CoreError ? err : new CoreError('UNAVAILABLE', 'storage unavailable', { cause: err });
      if (now - this.lastWarn >= UNAVAILABLE_WARN_MS) {
        this.lastWarn = now;
        this.opts.logger?.warn('rate limit store unavailable; requests are not being limited', {
          error: err instanceof Error ? err.message : String(err),
        });
      }
      return null;
    }
    const { allowed, used } = counted;
    return { allowed, kind, limit, remaining: allowed ? Math.max(0, limit - used) : 0, resetSec };
  }

  /** `RateLimit-Policy` (IETF draft-ietf-httpapi-ratelimit-headers): every quota counted, always the same. */
  policyHeader(): string {
    const w = Math.max(1, Math.round(this.settings.windowMs / 1000));
    return this.kinds.map((k) => `"${this.names[k]}";q=${this.limitOf(k)};w=${w}`).join(', ');
  }

  /**
   * Response headers for the decisions taken on one request: `RateLimit` with what is left of
   * each counted quota, `RateLimit-Policy`, and `Retry-After` when one of them refused.
   */
  headers(decisions: ReadonlyArray<RateLimitDecision | null>): Record<string, string> {
    const taken = decisions.filter((d): d is RateLimitDecision => d !== null);
    if (taken.length === 0) return {};
    const out: Record<string, string> = {
      RateLimit: taken.map((d) => `"${this.names[d.kind]}";r=${d.remaining};t=${d.resetSec}`).join(', '),
      'RateLimit-Policy': this.policyHeader(),
    };
    const refused = taken.find((d) => !d.allowed);
    if (refused) out['Retry-After'] = String(refused.resetSec);
    return out;
  }

  /** The error for a refused hit: RATE_LIMITED (HTTP 429), carrying the headers transports copy. */
  refusal(decision: RateLimitDecision, all: ReadonlyArray<RateLimitDecision | null> = [decision]): CoreError {
    this.opts.onRefusal?.(decision.kind);
    const what = decision.kind === 'requests' ? 'requests' : 'tool calls';
    const ms = this.settings.windowMs;
    const per = ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
    return new CoreError('RATE_LIMITED', `too many ${what}: ${decision.limit} per ${per}; retry in ${decision.resetSec} s`, {
      details: { limit: decision.limit, kind: decision.kind, retryAfterSec: decision.resetSec },
      headers: this.headers(all),
    });
  }
}
