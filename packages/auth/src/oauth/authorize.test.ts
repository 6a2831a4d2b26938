import { afterEach, describe, expect, it } from 'vitest';
import { authorizeUrl, BASE, consentBody, openConsent, pkce, REDIRECT, register, startHarness, type Harness } from './__tests__/harness.js';

let h: Harness;
afterEach(() => h?.close());

const postConsent = (h: Harness, body: string, headers: Record<string, string>) =>
  h.request('/oauth/authorize', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });

describe('GET /oauth/authorize', () => {
  it('shows a consent page that cannot be framed and sets a strict CSRF cookie', async () => {
    h = await startHarness();
    const client = await register(h, { client_name: '<script>alert(1)</script>' });
    const { res, html, requestId, csrf, cookie } = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
    expect(html).toContain(REDIRECT);
    expect(html).toContain('127.0.0.1'); // the provider's host
    expect(requestId).toBeTruthy();
    expect(csrf.length).toBeGreaterThan(40);
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly/i);
    expect(res.headers.get('set-cookie')).toMatch(/SameSite=Strict/i);
    expect(cookie.split('=')[1]).toBe(csrf);
  });

  it('accepts any port on a loopback redirect URI', async () => {
    h = await startHarness();
    const client = await register(h, { redirect_uris: ['http://127.0.0.1/callback'] });
    const { res } = await openConsent(
      h,
      authorizeUrl(client.client_id, pkce().challenge, { redirect_uri: 'http://127.0.0.1:49152/callback' }),
    );
    expect(res.status).toBe(200);
  });

  it('shows an error page (no redirect) for an unknown client or an unregistered redirect URI', async () => {
    h = await startHarness();
    const client = await register(h);
    const unknown = await h.request(authorizeUrl('nope', pkce().challenge));
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('location')).toBeNull();
    const badRedirect = await h.request(authorizeUrl(client.client_id, pkce().challenge, { redirect_uri: 'https://evil.example/cb' }));
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.headers.get('location')).toBeNull();
  });

  it.each([
    [{ code_challenge_method: 'plain' }, 'invalid_request'],
    [{ code_challenge_method: 's256' }, 'invalid_request'],
    [{ code_challenge_method: null }, 'invalid_request'],
    [{ code_challenge: '' }, 'invalid_request'],
    [{ code_challenge: null }, 'invalid_request'],
    [{ code_challenge: 'a'.repeat(42) }, 'invalid_request'],
    [{ code_challenge: 'a'.repeat(44) }, 'invalid_request'],
    [{ code_challenge: `${'a'.repeat(42)}=` }, 'invalid_request'],
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ resource: 'https://other.example/mcp' }, 'invalid_target'],
  ])('redirects %j back with %s, state and iss', async (extra, error) => {
    h = await startHarness();
    const client = await register(h);
    const res = await h.request(authorizeUrl(client.client_id, pkce().challenge, extra));
    expect(res.status).toBe(302);
    const loc = new URL(res.headers.get('location')!);
    expect(loc.origin + loc.pathname).toBe(REDIRECT);
    expect(loc.searchParams.get('error')).toBe(error);
    expect(loc.searchParams.get('state')).toBe('st-123');
    expect(loc.searchParams.get('iss')).toBe(BASE);
  });

  it('ignores unknown scopes and defaults to the configured ones', async () => {
    h = await startHarness();
    const client = await register(h);
    const { html } = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge, { scope: 'openid offline_access' }));
    expect(html).toContain('<code>mcp</code>');
    expect(html).toContain('<code>mcp:call</code>');
    expect(html).not.toContain('offline_access');
  });
});

describe('POST /oauth/authorize (consent)', () => {
  it('approval redirects to the provider with our own PKCE, state and nonce', async () => {
    h = await startHarness();
    const client = await register(h);
    const c = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    const res = await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: BASE });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(h.idp.issuer);
    expect(to.searchParams.get('client_id')).toBe('our-client-at-idp');
    expect(to.searchParams.get('redirect_uri')).toBe(`${BASE}/oauth/callback`);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('state')).not.toBe('st-123'); // never the client's state
    expect(to.searchParams.get('nonce')).toBeTruthy();
    expect(res.headers.get('set-cookie')).toMatch(/Max-Age=0/);
  });

  it('denial sends access_denied to the client', async () => {
    h = await startHarness();
    const client = await register(h);
    const c = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    const res = await postConsent(h, consentBody(c.requestId, c.csrf, 'deny'), { cookie: c.cookie });
    const loc = new URL(res.headers.get('location')!);
    expect(loc.searchParams.get('error')).toBe('access_denied');
    expect(loc.searchParams.get('state')).toBe('st-123');
  });

  it('refuses without the CSRF cookie, with a mismatched token, or from another origin', async () => {
    h = await startHarness();
    const client = await register(h);
    const c = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), {})).status).toBe(403);
    expect((await postConsent(h, consentBody(c.requestId, 'x'.repeat(43)), { cookie: c.cookie })).status).toBe(403);
    const other = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    // Someone else's valid token and cookie do not approve this request.
    expect((await postConsent(h, consentBody(c.requestId, other.csrf), { cookie: `${c.cookie.split('=')[0]}=${other.csrf}` })).status).toBe(
      403,
    );
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: 'https://evil.example' })).status).toBe(403);
    // A sandboxed iframe or data: page sends `Origin: null`: refused too, even with cookie and token.
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: 'null' })).status).toBe(403);
    expect(
      (await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: 'null', 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403);
    // Even with Sec-Fetch-Site claiming same-origin, null stays refused.
    expect(
      (await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: 'null', 'sec-fetch-site': 'same-origin' }))
        .status,
    ).toBe(403);
    // The request is still usable by its rightful owner.
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie, origin: BASE })).status).toBe(303);
  });

  it('a consent can be used once', async () => {
    h = await startHarness();
    const client = await register(h);
    const c = await openConsent(h, authorizeUrl(client.client_id, pkce().challenge));
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie })).status).toBe(303);
    expect((await postConsent(h, consentBody(c.requestId, c.csrf), { cookie: c.cookie })).status).toBe(400);
  });
});
