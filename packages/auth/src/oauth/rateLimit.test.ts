import { afterEach, describe, expect, it } from 'vitest';
import { form, startHarness, type Harness } from './__tests__/harness.js';

let h: Harness;
afterEach(() => h?.close());

describe('OAuth endpoint rate limits', () => {
  it('answers the (maxRequests+1)th request in a window with 429 and Retry-After', async () => {
    h = await startHarness({ oauth: { rateLimit: { maxRequests: 3 } } });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await h.request('/oauth/token', form({ grant_type: 'refresh_token', refresh_token: 'x', client_id: 'c' }));
      statuses.push(last.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same header format as procedures and /mcp (core's RateLimiter).
    expect(last!.headers.get('ratelimit')).toMatch(/^"oauth-token";r=0;t=\d+$/);
    expect(last!.headers.get('ratelimit-policy')).toBe('"oauth-token";q=3;w=60');
    expect((await last!.json()).error).toBe('rate_limited');
    // Other endpoints count separately; discovery is not limited.
    expect((await h.request('/register', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(
      400,
    );
    for (let i = 0; i < 5; i++) expect((await h.request('/.well-known/oauth-authorization-server')).status).toBe(200);
  });

  it('can be turned off', async () => {
    h = await startHarness({ oauth: { rateLimit: { enabled: false, maxRequests: 1 } } });
    for (let i = 0; i < 3; i++) expect((await h.request('/oauth/token', form({ grant_type: 'x', client_id: 'c' }))).status).toBe(401);
  });
});
