import { afterEach, describe, expect, it } from 'vitest';
import { startFakeIdp, type FakeIdp } from './__tests__/fakeIdp.js';
import { UpstreamProvider } from './upstreamProvider.js';

let idp: FakeIdp | undefined;
afterEach(() => idp?.close());

describe('UpstreamProvider', () => {
  it('discovers an OpenID provider from its issuer', async () => {
    idp = await startFakeIdp('cid', 'secret', { sub: 's' });
    const p = new UpstreamProvider({ provider: { issuer: idp.issuer }, clientId: 'cid', clientSecret: 'secret' });
    expect(await p.endpoints()).toMatchObject({
      issuer: idp.issuer,
      authorizationUrl: `${idp.issuer}/authorize`,
      tokenUrl: `${idp.issuer}/token`,
      userinfoUrl: `${idp.issuer}/userinfo`,
      tokenAuthMethod: 'client_secret_basic',
      scopes: ['openid', 'email', 'profile'],
    });
    const url = new URL(await p.authorizationUrl({ callbackUrl: 'https://me/cb', state: 's', codeChallenge: 'c', nonce: 'n' }));
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: 'cid',
      redirect_uri: 'https://me/cb',
      code_challenge_method: 'S256',
      nonce: 'n',
      scope: 'openid email profile',
    });
  });

  it('refuses a discovery document naming another issuer', async () => {
    idp = await startFakeIdp('cid', 'secret', { sub: 's' });
    const p = new UpstreamProvider({ provider: { issuer: idp.issuer.replace('127.0.0.1', 'localhost') }, clientId: 'cid' });
    await expect(p.endpoints()).rejects.toMatchObject({ appCode: 'UPSTREAM_ERROR' });
  });

  it('reports an unreachable provider as an upstream error', async () => {
    const p = new UpstreamProvider({ provider: { issuer: 'http://127.0.0.1:1' }, clientId: 'cid' });
    await expect(p.endpoints()).rejects.toMatchObject({ appCode: 'UPSTREAM_ERROR' });
  });

  it('has presets for GitHub (no network needed) and explicit endpoints', async () => {
    const gh = new UpstreamProvider({ provider: { preset: 'github' }, clientId: 'cid' });
    expect(await gh.endpoints()).toMatchObject({
      tokenUrl: 'https://github.com/login/oauth/access_token',
      userinfoUrl: 'https://api.github.com/user',
      tokenAuthMethod: 'client_secret_post',
      scopes: ['read:user', 'user:email'],
    });
    const explicit = new UpstreamProvider({
      provider: { authorizationUrl: 'https://idp/a', tokenUrl: 'https://idp/t', userinfoUrl: 'https://idp/u', scopes: ['x'] },
      clientId: 'cid',
    });
    expect(await explicit.endpoints()).toMatchObject({
      authorizationUrl: 'https://idp/a',
      tokenAuthMethod: 'client_secret_post',
      scopes: ['x'],
    });
    const url = new URL(await explicit.authorizationUrl({ callbackUrl: 'https://me/cb', state: 's', codeChallenge: 'c', nonce: 'n' }));
    expect(url.searchParams.has('nonce')).toBe(false);
  });

  it('signs in with explicit endpoints (userinfo, client_secret_basic)', async () => {
    idp = await startFakeIdp('cid', 'secret', { sub: 'u-9', email: 'e@x.test', name: 'E' });
    const p = new UpstreamProvider({
      provider: {
        authorizationUrl: `${idp.issuer}/authorize`,
        tokenUrl: `${idp.issuer}/token`,
        userinfoUrl: `${idp.issuer}/userinfo`,
        tokenEndpointAuthMethod: 'client_secret_basic',
      },
      clientId: 'cid',
      clientSecret: 'secret',
    });
    const verifier = 'v'.repeat(43);
    const { createHash } = await import('node:crypto');
    const at = await fetch(
      await p.authorizationUrl({
        callbackUrl: 'https://me/cb',
        state: 's',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        nonce: 'n',
      }),
      { redirect: 'manual' },
    );
    const code = new URL(at.headers.get('location')!).searchParams.get('code')!;
    expect(await p.signIn({ code, callbackUrl: 'https://me/cb', verifier, nonce: 'n' })).toEqual({
      sub: 'u-9',
      email: 'e@x.test',
      emailVerified: false,
      name: 'E',
    });
    idp.tokenError = 'invalid_grant';
    await expect(p.signIn({ code: 'x', callbackUrl: 'https://me/cb', verifier, nonce: 'n' })).rejects.toMatchObject({
      appCode: 'UPSTREAM_ERROR',
      message: expect.stringContaining('invalid_grant'),
    });
  });
});
