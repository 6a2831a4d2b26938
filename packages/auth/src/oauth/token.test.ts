import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { SetOptions } from '@ai-backend/core';
import { MemoryStorage } from '@ai-backend/core/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE, form, obtainTokens, pkce, REDIRECT, register, signIn, startHarness, type Harness } from './__tests__/harness.js';

let h: Harness;
afterEach(() => h?.close());

async function codeFor(h: Harness, clientId: string) {
  const p = pkce();
  const { code } = await signIn(h, clientId, p.challenge);
  return { code: code!, verifier: p.verifier };
}

const exchange = (h: Harness, p: Record<string, string>, headers: Record<string, string> = {}) => {
  const init = form({ grant_type: 'authorization_code', redirect_uri: REDIRECT, ...p });
  return h.request('/oauth/token', { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } });
};

describe('POST /oauth/token: authorization_code', () => {
  it('issues an ES256 access token for the /mcp resource and an opaque refresh token', async () => {
    h = await startHarness();
    const client = await register(h);
    const { code, verifier } = await codeFor(h, client.client_id);
    const res = await exchange(h, { code, code_verifier: verifier, client_id: client.client_id, resource: `${BASE}/mcp` });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const t = await res.json();
    expect(t).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp mcp:call' });
    expect(t.refresh_token).toMatch(/^[\w-]{43}$/);
    expect(decodeProtectedHeader(t.access_token)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    const claims = decodeJwt(t.access_token);
    expect(claims).toMatchObject({ iss: BASE, aud: `${BASE}/mcp`, sub: h.userId, client_id: client.client_id, scope: 'mcp mcp:call' });
    expect(claims.exp! - claims.iat!).toBe(3600);
    const identity = await h.oauth.verifyAccessToken(t.access_token);
    expect(identity).toMatchObject({
      sub: h.userId,
      email: 'alice@example.com',
      scopes: ['mcp', 'mcp:call'],
      via: 'oauth',
      clientId: client.client_id,
      isAdmin: false,
    });
  });

  it('refuses a wrong PKCE verifier, a different redirect_uri, another client or a missing verifier', async () => {
    h = await startHarness();
    const client = await register(h);
    const other = await register(h);
    const bads: Array<Record<string, string>> = [
      { code_verifier: pkce().verifier },
      { redirect_uri: 'http://127.0.0.1:9999/callback' },
      { client_id: other.client_id },
    ];
    for (const bad of bads) {
      const { code, verifier } = await codeFor(h, client.client_id);
      const res = await exchange(h, { code, code_verifier: verifier, client_id: client.client_id, ...bad });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBe('invalid_grant');
    }
    const { code } = await codeFor(h, client.client_id);
    expect((await (await exchange(h, { code, client_id: client.client_id })).json()).error).toBe('invalid_request');
  });

  it('redirect_uri may be left out of the token request only when the authorization request left it out', async () => {
    h = await startHarness();
    const client = await register(h);
    const omitted = async () => {
      const p = pkce();
      const { code } = await signIn(h, client.client_id, p.challenge, { redirect_uri: null });
      return { code: code!, code_verifier: p.verifier, client_id: client.client_id };
    };
    // OAuth 2.1 §4.1.3: the client registered one redirect URI and named none, so it need not repeat it.
    const noRedirect = (p: Record<string, string>) => h.request('/oauth/token', form({ grant_type: 'authorization_code', ...p }));
    expect((await noRedirect(await omitted())).status).toBe(200);
    // Named anyway, it must be the registered one.
    expect((await exchange(h, await omitted())).status).toBe(200);
    const other = await exchange(h, { ...(await omitted()), redirect_uri: 'http://127.0.0.1:7777/other' });
    expect((await other.json()).error).toBe('invalid_grant');
    // Named in the authorization request: required, and identical.
    const { code, verifier } = await codeFor(h, client.client_id);
    const missing = await noRedirect({ code, code_verifier: verifier, client_id: client.client_id });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toBe('invalid_grant');
  });

  it('takes PKCE verifiers of 43 to 128 unreserved characters only (RFC 7636 §4.1)', async () => {
    h = await startHarness();
    const client = await register(h);
    const tryVerifier = async (verifier: string) => {
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const { code } = await signIn(h, client.client_id, challenge);
      return exchange(h, { code: code!, code_verifier: verifier, client_id: client.client_id });
    };
    for (const ok of ['a'.repeat(43), `${'-._~'.repeat(31)}Zz09`]) expect((await tryVerifier(ok)).status, ok).toBe(200);
    for (const bad of ['a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`, `${'a'.repeat(42)} `]) {
      const res = await tryVerifier(bad);
      expect(res.status, bad).toBe(400);
      expect(await res.json(), bad).toMatchObject({ error: 'invalid_request', error_description: 'malformed code_verifier' });
    }
  });

  it('a code works once; replaying it revokes the tokens it produced', async () => {
    h = await startHarness();
    const client = await register(h);
    const { code, verifier } = await codeFor(h, client.client_id);
    const first = await (await exchange(h, { code, code_verifier: verifier, client_id: client.client_id })).json();
    const again = await exchange(h, { code, code_verifier: verifier, client_id: client.client_id });
    expect(again.status).toBe(400);
    expect((await again.json()).error_description).toMatch(/already used/);
    await expect(h.oauth.verifyAccessToken(first.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
  });

  it('expires codes after authCodeTtlSec', async () => {
    h = await startHarness({ oauth: { authCodeTtlSec: 10 } });
    const client = await register(h);
    const { code, verifier } = await codeFor(h, client.client_id);
    const realNow = Date.now;
    Date.now = () => realNow() + 11_000;
    try {
      expect((await (await exchange(h, { code, code_verifier: verifier, client_id: client.client_id })).json()).error).toBe(
        'invalid_grant',
      );
    } finally {
      Date.now = realNow;
    }
  });

  it('authenticates confidential clients with client_secret_basic or client_secret_post', async () => {
    h = await startHarness();
    const client = await register(h, { token_endpoint_auth_method: 'client_secret_basic' });
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    let { code, verifier } = await codeFor(h, client.client_id);
    expect((await exchange(h, { code, code_verifier: verifier }, { authorization: basic })).status).toBe(200);
    ({ code, verifier } = await codeFor(h, client.client_id));
    expect(
      (await exchange(h, { code, code_verifier: verifier, client_id: client.client_id, client_secret: client.client_secret! })).status,
    ).toBe(200);
    ({ code, verifier } = await codeFor(h, client.client_id));
    const wrong = await exchange(
      h,
      { code, code_verifier: verifier },
      { authorization: `Basic ${Buffer.from(`${client.client_id}:nope`).toString('base64')}` },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await exchange(h, { code, code_verifier: verifier, client_id: client.client_id })).status).toBe(401);
  });

  it('refuses JSON bodies, repeated parameters and unknown grant types', async () => {
    h = await startHarness();
    const client = await register(h);
    const json = await h.request('/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect((await json.json()).error).toBe('invalid_request');
    const repeated = await h.request('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${client.client_id}&code=a&code=b`,
    });
    expect((await repeated.json()).error).toBe('invalid_request');
    expect((await (await h.request('/oauth/token', form({ grant_type: 'password', client_id: client.client_id }))).json()).error).toBe(
      'unsupported_grant_type',
    );
  });
});

describe('POST /oauth/token: refresh_token', () => {
  const refresh = (h: Harness, clientId: string, token: string, extra: Record<string, string> = {}) =>
    h.request('/oauth/token', form({ grant_type: 'refresh_token', refresh_token: token, client_id: clientId, ...extra }));

  it('rotates: the new pair works, the old refresh token does not', async () => {
    h = await startHarness();
    const client = await register(h);
    const first = await obtainTokens(h, client.client_id);
    const res = await refresh(h, client.client_id, first.refresh_token);
    expect(res.status).toBe(200);
    const second = await res.json();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect(await h.oauth.verifyAccessToken(second.access_token)).toMatchObject({ sub: h.userId });
    expect((await refresh(h, client.client_id, second.refresh_token)).status).toBe(200);
  });

  it('reuse of a rotated refresh token revokes the whole family', async () => {
    h = await startHarness({ oauth: { sessionCacheMs: 0 } });
    const client = await register(h);
    const first = await obtainTokens(h, client.client_id);
    const second = await (await refresh(h, client.client_id, first.refresh_token)).json();
    const reuse = await refresh(h, client.client_id, first.refresh_token);
    expect(reuse.status).toBe(400);
    expect((await reuse.json()).error).toBe('invalid_grant');
    // The legitimate holder's newer tokens are dead too.
    expect((await refresh(h, client.client_id, second.refresh_token)).status).toBe(400);
    await expect(h.oauth.verifyAccessToken(second.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
    expect(h.logger.lines.some((l) => l.fields?.event === 'session_revoked' && l.fields.reason === 'refresh token reused')).toBe(true);
  });

  it('a refresh that read the session before a revocation does not bring the revoked session back', async () => {
    // The refresh token's use (a compareAndSet on its record) waits until the session is revoked.
    let revoked!: () => void;
    const revocation = new Promise<void>((r) => (revoked = r));
    let reached!: () => void;
    const atUse = new Promise<void>((r) => (reached = r));
    let paused = false;
    class PausingStorage extends MemoryStorage {
      override async compareAndSet(key: string, expected: unknown, next: unknown, opts?: SetOptions): Promise<boolean> {
        if (paused && key.startsWith('oauth:refresh:')) {
          paused = false;
          reached();
          await revocation;
        }
        return super.compareAndSet(key, expected, next, opts);
      }
    }
    h = await startHarness({ oauth: { sessionCacheMs: 0 } }, undefined, new PausingStorage());
    const client = await register(h);
    const first = await obtainTokens(h, client.client_id);
    paused = true;
    const refreshing = refresh(h, client.client_id, first.refresh_token);
    // It has read the session and is about to use the refresh token.
    await atUse;
    const out = await h.request('/oauth/revoke', form({ token: first.access_token, client_id: client.client_id }));
    expect(out.status).toBe(200);
    revoked();
    const res = await refreshing;
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant', error_description: 'session not found' });
    await expect(h.oauth.verifyAccessToken(first.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
    expect(await h.storage.keys('oauth:session:')).toEqual([]);
  });

  it('refuses a refresh token presented by another client', async () => {
    h = await startHarness();
    const client = await register(h);
    const other = await register(h);
    const t = await obtainTokens(h, client.client_id);
    expect((await (await refresh(h, other.client_id, t.refresh_token)).json()).error).toBe('invalid_grant');
  });

  it('allows narrowing the scope but not widening it', async () => {
    h = await startHarness();
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    const wide = await refresh(h, client.client_id, t.refresh_token, { scope: 'mcp mcp:admin' });
    expect((await wide.json()).error).toBe('invalid_scope');
    const t2 = await obtainTokens(h, client.client_id);
    const narrow = await (await refresh(h, client.client_id, t2.refresh_token, { scope: 'mcp' })).json();
    expect(narrow.scope).toBe('mcp');
    // The next refresh still carries the original grant.
    expect((await (await refresh(h, client.client_id, narrow.refresh_token)).json()).scope).toBe('mcp mcp:call');
  });

  it('a refused refresh (invalid_scope, invalid_target, another client) does not use the token up', async () => {
    h = await startHarness({ oauth: { sessionCacheMs: 0 } });
    const client = await register(h);
    const other = await register(h);
    const t = await obtainTokens(h, client.client_id);
    const refusals: Array<[string, Response]> = [
      ['invalid_scope', await refresh(h, client.client_id, t.refresh_token, { scope: 'mcp mcp:admin' })],
      ['invalid_target', await refresh(h, client.client_id, t.refresh_token, { resource: 'https://elsewhere.example/mcp' })],
      ['invalid_grant', await refresh(h, other.client_id, t.refresh_token)],
    ];
    for (const [error, res] of refusals) {
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBe(error);
    }
    // The holder's next valid refresh is not mistaken for reuse: it succeeds, the session lives.
    const ok = await refresh(h, client.client_id, t.refresh_token);
    expect(ok.status).toBe(200);
    expect(await h.oauth.verifyAccessToken((await ok.json()).access_token)).toMatchObject({ sub: h.userId });
    expect(h.logger.lines.some((l) => l.fields?.event === 'session_revoked')).toBe(false);
  });

  it('re-evaluates roles at refresh: a user removed from admin.users loses mcp:admin (and admin rights at once)', async () => {
    h = await startHarness({ admin: { users: ['alice@example.com'] } });
    const client = await register(h);
    const p = pkce();
    const { code } = await signIn(h, client.client_id, p.challenge, { scope: 'mcp mcp:admin' });
    const t = await (await exchange(h, { code: code!, code_verifier: p.verifier, client_id: client.client_id })).json();
    expect(t.scope).toBe('mcp mcp:admin');
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ isAdmin: true });
    (h.runtime.config.admin.users as string[]).length = 0;
    // The access token already issued still names the scope, but admin rights follow the list.
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ isAdmin: false });
    const next = await (await refresh(h, client.client_id, t.refresh_token)).json();
    expect(next.scope).toBe('mcp');
    expect(decodeJwt(next.access_token).scope).toBe('mcp');
  });

  it('issues no refresh token to a client registered without the refresh_token grant', async () => {
    h = await startHarness();
    const client = await register(h, { grant_types: ['authorization_code'] });
    const p = pkce();
    const { code } = await signIn(h, client.client_id, p.challenge);
    const t = await (await exchange(h, { code: code!, code_verifier: p.verifier, client_id: client.client_id })).json();
    expect(t.access_token).toBeTruthy();
    expect(t).not.toHaveProperty('refresh_token');
  });
});
