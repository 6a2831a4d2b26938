import { afterEach, describe, expect, it } from 'vitest';
import { BASE, obtainTokens, pkce, REDIRECT, register, signIn, startHarness, type Harness } from './__tests__/harness.js';
import { SessionStore } from './sessionStore.js';
import { sha256 } from './crypto.js';
import type { SessionRecord } from './records.js';

let h: Harness;
afterEach(() => h?.close());

describe('GET /oauth/callback', () => {
  it('exchanges the provider code and redirects with our own code, state and iss', async () => {
    h = await startHarness();
    const client = await register(h);
    const { code, location } = await signIn(h, client.client_id, pkce().challenge);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(code).toMatch(/^[\w-]{43}$/);
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe(BASE);
    // We sent our PKCE verifier to the provider and used the exact callback URL.
    const sent = h.idp.tokenRequests[0]!;
    expect(sent.get('redirect_uri')).toBe(`${BASE}/oauth/callback`);
    expect(sent.get('code_verifier')).toMatch(/^[\w-]{43,}$/);
    // Our code is stored hashed and sealed.
    expect(await h.storage.get(`oauth:code:${code}`)).toBeUndefined();
    expect(typeof (await h.storage.get(`oauth:code:${sha256(code!)}`))).toBe('string');
  });

  it("checks the provider's iss (RFC 9207): another issuer, or none after promising it, is refused before the code is redeemed", async () => {
    for (const [advertiseIss, issInResponse, ok] of [
      [true, 'http://127.0.0.1:1/evil', false],
      [true, null, false],
      [false, null, true],
      [false, 'http://127.0.0.1:1/evil', false],
    ] as const) {
      h = await startHarness();
      h.idp.advertiseIss = advertiseIss;
      h.idp.issInResponse = issInResponse;
      const client = await register(h);
      const { code, location } = await signIn(h, client.client_id, pkce().challenge);
      const label = `advertised ${advertiseIss}, iss ${issInResponse}`;
      expect(code !== null, label).toBe(ok);
      if (!ok) {
        expect(location.searchParams.get('error'), label).toBe('server_error');
        expect(location.searchParams.get('iss'), label).toBe(BASE);
        expect(h.idp.tokenRequests, label).toHaveLength(0);
      }
      await h.close();
    }
  });

  it('does not keep the provider tokens anywhere', async () => {
    h = await startHarness();
    const client = await register(h);
    await signIn(h, client.client_id, pkce().challenge);
    const store = new SessionStore(h.storage, 'k'.repeat(40));
    const keys = await h.storage.keys('oauth:session:');
    expect(keys).toHaveLength(1);
    const session = await store.get<SessionRecord>('session', keys[0]!.slice('oauth:session:'.length));
    expect(session).toMatchObject({ sub: h.userId, email: 'alice@example.com', name: 'Alice' });
    expect(JSON.stringify(session)).not.toMatch(/access_token|id_token/);
  });

  it('refuses an unknown or replayed state with an error page', async () => {
    h = await startHarness();
    const res = await h.request('/oauth/callback?code=x&state=forged');
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('passes a provider refusal to the client as access_denied', async () => {
    h = await startHarness();
    const client = await register(h);
    const consent = await import('./__tests__/harness.js').then((m) =>
      m.openConsent(h, m.authorizeUrl(client.client_id, pkce().challenge)),
    );
    const approved = await h.request('/oauth/authorize', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: consent.cookie },
      body: new URLSearchParams({ request_id: consent.requestId, csrf_token: consent.csrf, decision: 'approve' }).toString(),
    });
    const state = new URL(approved.headers.get('location')!).searchParams.get('state')!;
    const { flowCookie } = await import('./__tests__/harness.js');
    const res = await h.request(`/oauth/callback?error=access_denied&state=${encodeURIComponent(state)}`, {
      headers: { cookie: flowCookie(approved) },
    });
    const loc = new URL(res.headers.get('location')!);
    expect(loc.searchParams.get('error')).toBe('access_denied');
    expect(loc.searchParams.get('state')).toBe('st-123');
    // The state was single-use.
    expect((await h.request(`/oauth/callback?code=x&state=${encodeURIComponent(state)}`)).status).toBe(400);
  });

  it('completes a flow only in the browser that approved its consent (no flow carried to a victim’s browser)', async () => {
    h = await startHarness();
    const client = await register(h);
    const m = await import('./__tests__/harness.js');
    // The attacker's browser: authorize and approve.
    const consent = await m.openConsent(h, m.authorizeUrl(client.client_id, pkce().challenge));
    const approved = await h.request('/oauth/authorize', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: consent.cookie },
      body: m.consentBody(consent.requestId, consent.csrf),
    });
    expect(approved.status).toBe(303);
    const binding = m.flowCookie(approved);
    expect(binding).toMatch(/^aib_flow_[\w-]+=.+/);
    const set = approved.headers.getSetCookie().find((c) => c.startsWith('aib_flow_'))!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Lax/i);
    expect(set).toMatch(/Path=\/oauth\/callback/i);
    // The victim's browser, sent the provider's URL: signed in there at once, back to our callback
    // without the attacker's cookie. Refused, and nothing is issued.
    const atIdp = await fetch(approved.headers.get('location')!, { redirect: 'manual' });
    const callback = new URL(atIdp.headers.get('location')!);
    const inVictim = await h.request(callback.pathname + callback.search);
    expect(inVictim.status).toBe(403);
    expect(inVictim.headers.get('location')).toBeNull();
    expect(await h.storage.keys('oauth:session:')).toHaveLength(0);
    expect(await h.storage.keys('oauth:code:')).toHaveLength(0);
    // A wrong binding is refused the same way.
    const again = await m.openConsent(h, m.authorizeUrl(client.client_id, pkce().challenge));
    const approved2 = await h.request('/oauth/authorize', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: again.cookie },
      body: m.consentBody(again.requestId, again.csrf),
    });
    const atIdp2 = await fetch(approved2.headers.get('location')!, { redirect: 'manual' });
    const cb2 = new URL(atIdp2.headers.get('location')!);
    const forged = m.flowCookie(approved2).replace(/=.*/, '=forged');
    expect((await h.request(cb2.pathname + cb2.search, { headers: { cookie: forged } })).status).toBe(403);
  });

  it('refuses an id_token with the wrong nonce', async () => {
    h = await startHarness();
    h.idp.badNonce = true;
    const client = await register(h);
    const { code, location } = await signIn(h, client.client_id, pkce().challenge);
    expect(code).toBeNull();
    expect(location.searchParams.get('error')).toBe('server_error');
    expect(await h.storage.keys('oauth:session:')).toHaveLength(0);
  });

  // email_verified false, the string "false" (some userinfo endpoints), or no claim at all:
  // none of them may make the holder of the address an administrator.
  for (const [label, verified] of [
    ['false', false],
    ['"false"', 'false'],
    ['missing', undefined],
  ] as const) {
    it(`an unverified e-mail (email_verified ${label}) cannot match admin.users`, async () => {
      const user = { sub: 'u2', email: 'boss@example.com', ...(verified === undefined ? {} : { email_verified: verified as boolean }) };
      h = await startHarness({ admin: { users: ['boss@example.com'] } }, user);
      const client = await register(h);
      await signIn(h, client.client_id, pkce().challenge, { scope: 'mcp mcp:admin' });
      const store = new SessionStore(h.storage, 'k'.repeat(40));
      const [key] = await h.storage.keys('oauth:session:');
      const session = await store.get<SessionRecord>('session', key!.slice('oauth:session:'.length));
      expect(session?.emailVerified).toBe(false);
      expect(session?.scopes).toEqual(['mcp']);
      const t = await obtainTokens(h, client.client_id);
      expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ isAdmin: false, emailVerified: false });
    });
  }

  it('matches an administrator by issuer + subject (the qualified id), never by the bare subject', async () => {
    h = await startHarness({ admin: { users: ['u4'] } }, { sub: 'u4' });
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ sub: h.userId, isAdmin: false });
    // The qualified id is known only once the IdP listens; admin.users is read on every request.
    (h.runtime.config.admin.users as string[]).push(h.userId);
    expect(h.userId).toMatch(/^idp:http:\/\/127\.0\.0\.1:\d+#u4$/);
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ isAdmin: true });
  });

  it('grants the admin scope to a configured administrator', async () => {
    h = await startHarness({ admin: { users: ['boss@example.com'] } }, { sub: 'u3', email: 'boss@example.com', email_verified: true });
    const client = await register(h);
    await signIn(h, client.client_id, pkce().challenge, { scope: 'mcp mcp:admin' });
    const store = new SessionStore(h.storage, 'k'.repeat(40));
    const [key] = await h.storage.keys('oauth:session:');
    expect((await store.get<SessionRecord>('session', key!.slice('oauth:session:'.length)))?.scopes).toEqual(['mcp', 'mcp:admin']);
  });
});
