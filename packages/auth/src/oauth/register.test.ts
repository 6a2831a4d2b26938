import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '@ai-backend/core/internal';
import { authorizeUrl, ENCRYPTION_KEY, obtainTokens, pkce, register, startHarness, type Harness } from './__tests__/harness.js';

const OAUTH = { encryptionKey: ENCRYPTION_KEY, providerClientId: 'id', provider: { issuer: 'https://idp.example' } };

let h: Harness;
afterEach(() => h?.close());

const post = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

describe('POST /register', () => {
  it('registers a public client (open policy) and never stores a secret in clear', async () => {
    h = await startHarness();
    const res = await h.request(
      '/register',
      post({ redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', client_name: 'VS Code' }),
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const c = await res.json();
    expect(c).toMatchObject({
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      client_name: 'VS Code',
      grant_types: ['authorization_code', 'refresh_token'],
    });
    expect(c.client_id).toMatch(/^[\w-]{20,}$/);
    expect(c).not.toHaveProperty('client_secret');
    expect(c).not.toHaveProperty('client_secret_hash');
  });

  it('issues a secret to a confidential client, stored hashed and encrypted', async () => {
    h = await startHarness();
    const c = await (await h.request('/register', post({ redirect_uris: ['https://app.example.com/cb'] }))).json();
    expect(c.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(c.client_secret).toMatch(/^[\w-]{40,}$/);
    expect(c.client_secret_expires_at).toBe(0);
    const raw = JSON.stringify(await h.storage.get(`oauth:client:${c.client_id}`));
    expect(raw).not.toContain(c.client_secret);
    expect(raw).not.toContain('app.example.com');
  });

  it.each([
    [{ redirect_uris: ['http://example.com/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://a.example/cb#x'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], grant_types: ['implicit'] }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], client_uri: 'javascript' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], client_uri: 'javascript:alert(document.domain)' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], logo_uri: 'data:image/svg+xml,<svg onload=alert(1)>' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://a.example/cb'], client_uri: 'file:///etc/passwd' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['javascript:alert(1)//'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['data:text/html,x'] }, 'invalid_redirect_uri'],
  ])('refuses %j with %s', async (body, error) => {
    h = await startHarness();
    const res = await h.request('/register', post(body));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe(error);
  });

  it('refuses a body that is not JSON', async () => {
    h = await startHarness();
    const res = await h.request('/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(res.status).toBe(400);
    // Said as what it is, not as a missing object ("expected object, received undefined").
    expect(await res.json()).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringMatching(/not JSON/) });
  });

  it("with policy 'token' requires the initial access token", async () => {
    const iat = 'i'.repeat(40);
    h = await startHarness({ oauth: { registration: { policy: 'token', initialAccessToken: iat } } });
    const body = { redirect_uris: ['https://a.example/cb'] };
    const none = await h.request('/register', post(body));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await h.request('/register', post(body, { authorization: `Bearer ${'j'.repeat(40)}` }))).status).toBe(401);
    expect((await h.request('/register', post(body, { authorization: `Bearer ${iat}` }))).status).toBe(201);
  });

  it('accepts allowed private-use schemes only', async () => {
    h = await startHarness({ oauth: { registration: { allowedCustomSchemes: ['cursor'] } } });
    expect((await h.request('/register', post({ redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback'] }))).status).toBe(201);
    expect((await h.request('/register', post({ redirect_uris: ['vscode://x/cb'] }))).status).toBe(400);
  });

  it.each(['javascript', 'data', 'file'])('refuses a config that lists %s as a private-use scheme', (scheme) => {
    const config = { oauth: { ...OAUTH, registration: { allowedCustomSchemes: [scheme] } } };
    expect(() => resolveConfig(config)).toThrow(/not a private-use scheme/);
  });

  it('caps field sizes and the size of the whole registration', async () => {
    h = await startHarness();
    const long = `https://app.example.com/${'a'.repeat(2100)}`;
    expect((await h.request('/register', post({ redirect_uris: [long] }))).status).toBe(400);
    expect((await h.request('/register', post({ redirect_uris: ['https://app.example.com/cb'], junk: 'x'.repeat(40_000) }))).status).toBe(
      400,
    );
    const many = Array.from({ length: 10 }, (_, i) => `https://app.example.com/${i}/${'b'.repeat(1900)}`);
    const res = await h.request('/register', post({ redirect_uris: many }));
    expect(res.status).toBe(400);
    expect((await res.json()).error_description).toMatch(/larger than 8192 bytes/);
  });

  it('caps registrations per address and day', async () => {
    h = await startHarness({ oauth: { registration: { maxPerAddressPerDay: 3 } } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await h.request('/register', post({ redirect_uris: ['https://app.example.com/cb'] }))).status);
    expect(statuses).toEqual([201, 201, 201, 429, 429]);
  });

  it('expires clients that never completed an authorization; a used client stays, and expired ones are pruned', async () => {
    h = await startHarness({ oauth: { registration: { unusedClientTtlSec: 3600 } } });
    const unused = await register(h);
    const used = await register(h);
    await obtainTokens(h, used.client_id);
    const realNow = Date.now;
    Date.now = () => realNow() + 2 * 3600_000;
    try {
      const page = await h.request(authorizeUrl(unused.client_id, pkce().challenge));
      expect(page.status).toBe(400);
      expect(await page.text()).toContain('Unknown application');
      expect((await h.request(authorizeUrl(used.client_id, pkce().challenge))).status).toBe(200);
      // Pruned from storage, not only unreadable.
      expect(await h.storage.keys(`oauth:client:${unused.client_id}`)).toEqual([]);
      expect(await h.storage.keys(`oauth:client:${used.client_id}`)).toHaveLength(1);
    } finally {
      Date.now = realNow;
    }
  });
});
