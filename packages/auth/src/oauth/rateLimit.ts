import type { MiddlewareHandler } from 'hono';
import { oauthError } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';

/**
 * Fixed-window limit per client address and endpoint group, counted in the session storage so
 * instances sharing Redis share the count. Answers 429 with Retry-After and RateLimit headers.
 */
export function rateLimit(services: () => Promise<OAuthServices>, group: string): MiddlewareHandler {
  return async (c, next) => {
    const s = await services();
    const { enabled, windowMs, maxRequests } = s.settings.rateLimit;
    if (!enabled) return next();
    const now = Date.now();
    const window = Math.floor(now / windowMs);
    const resetSec = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000));
    const key = `oauth:rl:${group}:${s.clientIp(c)}:${window}`;
    const count = (await s.store.storage.increment(key, 1, { ttlMs: windowMs })) ?? 0;
    const headers = {
      'RateLimit-Limit': String(maxRequests),
      'RateLimit-Remaining': String(Math.max(0, maxRequests - count)),
      'RateLimit-Reset': String(resetSec),
    };
    if (count > maxRequests) {
      s.logger.warn('oauth rate limit hit', { event: 'rate_limited', endpoint: group, ip: s.clientIp(c) });
      return oauthError(c, 429, 'rate_limited', 'too many requests; retry later', { ...headers, 'Retry-After': String(resetSec) });
    }
    await next();
    for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  };
}
