import type { MiddlewareHandler } from 'hono';
import { RateLimiter, rateLimitCaller, storeOutageFor } from '@ai-backend/core/internal';
import { oauthError } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';

/**
 * Fixed-window limit per client address and endpoint group, with core's RateLimiter (the one
 * limiter of the project): counted in the session storage so instances sharing Redis share the
 * count, and answered with the same headers as procedures and /mcp: `RateLimit`,
 * `RateLimit-Policy` (policy "oauth-<group>") and, over the limit, 429 with `Retry-After`.
 */
export function rateLimit(services: () => Promise<OAuthServices>, group: string): MiddlewareHandler {
  let limiter: RateLimiter | undefined;
  return async (c, next) => {
    const s = await services();
    const { enabled, windowMs, maxRequests } = s.settings.rateLimit;
    if (!enabled) return next();
    limiter ??= new RateLimiter(
      s.store.storage,
      { enabled, windowMs, maxRequests, maxToolCalls: maxRequests },
      {
        prefix: `oauth:rl:${group}:`,
        names: { requests: `oauth-${group}` },
        kinds: ['requests'],
        logger: s.logger,
        // Counted in the store the endpoint reads next: on PostgreSQL its outage answers the 503
        // (temporarily_unavailable, through the routes' onError) after one timeout, not two.
        storeOutage: storeOutageFor(s.store.storage, s.store.storage),
      },
    );
    const ip = s.clientIp(c);
    const decision = await limiter.hit('requests', rateLimitCaller(null, ip));
    const headers = limiter.headers([decision]);
    if (decision && !decision.allowed) {
      s.logger.warn('oauth rate limit hit', { event: 'rate_limited', endpoint: group, ip });
      return oauthError(c, 429, 'rate_limited', 'too many requests; retry later', headers);
    }
    await next();
    for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  };
}
