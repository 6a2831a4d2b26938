import { afterEach, describe, expect, it } from 'vitest';
import { form, obtainTokens, register, startHarness, type Harness } from './__tests__/harness.js';

let h: Harness;
afterEach(() => h?.close());

describe('GET /oauth/userinfo', () => {
  it('returns the signed-in user for our access token', async () => {
    h = await startHarness();
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    const res = await h.request('/oauth/userinfo', { headers: { authorization: `Bearer ${t.access_token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ sub: h.userId, email: 'alice@example.com', name: 'Alice' });
  });

  it('answers 401 with a resource_metadata challenge without or with a bad token', async () => {
    h = await startHarness();
    const none = await h.request('/oauth/userinfo');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(
      'Bearer resource_metadata="http://auth.test/.well-known/oauth-protected-resource/mcp"',
    );
    const bad = await h.request('/oauth/userinfo', { headers: { authorization: 'Bearer abc.def.ghi' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });
});

describe('POST /oauth/revoke', () => {
  it('revoking the refresh token ends the session', async () => {
    h = await startHarness({ oauth: { sessionCacheMs: 0 } });
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    const res = await h.request('/oauth/revoke', form({ token: t.refresh_token, client_id: client.client_id }));
    expect(res.status).toBe(200);
    await expect(h.oauth.verifyAccessToken(t.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
  });

  it("another client cannot revoke someone else's token; unknown tokens get 200", async () => {
    h = await startHarness({ oauth: { sessionCacheMs: 0 } });
    const client = await register(h);
    const other = await register(h);
    const t = await obtainTokens(h, client.client_id);
    expect((await h.request('/oauth/revoke', form({ token: t.access_token, client_id: other.client_id }))).status).toBe(200);
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ sub: h.userId });
    expect((await h.request('/oauth/revoke', form({ token: 'unknown', client_id: client.client_id }))).status).toBe(200);
  });
});
