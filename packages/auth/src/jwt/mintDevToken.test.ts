import { resolveConfig } from '@ai-backend/core';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { createAuthenticator } from './createAuthenticator.js';
import { mintDevToken } from './mintDevToken.js';
import { AUDIENCE, ISSUER, now, SECRET } from './__tests__/craft.js';

describe('mintDevToken', () => {
  const config = resolveConfig({
    mcp: { auth: { authType: 'none', jwt: { requiredScopes: ['mcp'] } } },
    jwt: { secret: SECRET, issuer: ISSUER, audience: AUDIENCE },
    admin: { users: ['dev@example.com'] },
  });
  const authenticate = createAuthenticator(config);

  it('mints a token the configured server accepts, with the identity asked for', async () => {
    const token = await mintDevToken({
      secret: SECRET,
      sub: 'dev',
      email: 'dev@example.com',
      scopes: ['mcp', 'mcp:call'],
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const result = await authenticate(token);
    expect(result).toEqual({
      ok: true,
      identity: { sub: 'dev', email: 'dev@example.com', emailVerified: true, scopes: ['mcp', 'mcp:call'], isAdmin: true, via: 'jwt' },
    });
  });

  it('sets exp from expiresIn in seconds or as a time span (default one hour)', async () => {
    const base = { secret: SECRET, sub: 'dev' };
    expect(decodeJwt(await mintDevToken({ ...base, expiresIn: 120 })).exp).toBeCloseTo(now() + 120, -1);
    expect(decodeJwt(await mintDevToken({ ...base, expiresIn: '2h' })).exp).toBeCloseTo(now() + 7200, -1);
    expect(decodeJwt(await mintDevToken(base)).exp).toBeCloseTo(now() + 3600, -1);
  });

  it('a token without the configured issuer is refused', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'dev', scopes: ['mcp'], audience: AUDIENCE });
    const result = await authenticate(token);
    expect(result.ok).toBe(false);
  });

  it('refuses a short secret and an empty sub', async () => {
    await expect(mintDevToken({ secret: 'short', sub: 'dev' })).rejects.toThrow(/32 bytes/);
    await expect(mintDevToken({ secret: SECRET, sub: '' })).rejects.toThrow(/sub/);
  });
});
