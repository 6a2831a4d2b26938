import { resolveConfig, type Identity } from '@ai-backend/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAuthenticator } from './createAuthenticator.js';
import { createJwtVerifier } from './createJwtVerifier.js';
import { VerifiedTokenCache } from './VerifiedTokenCache.js';
import { MAX_TOKEN_LENGTH } from './inspectToken.js';
import { goodClaims, HS256, now, SECRET, signRaw } from './__tests__/craft.js';

const id = (sub: string): Identity => ({ sub, scopes: ['a'], isAdmin: false, via: 'jwt' });

describe('VerifiedTokenCache', () => {
  it('evicts the least recently used entry beyond maxEntries', () => {
    const cache = new VerifiedTokenCache(2);
    cache.set('a', id('a'), Infinity);
    cache.set('b', id('b'), Infinity);
    expect(cache.get('a')?.sub).toBe('a'); // a is now the most recent
    cache.set('c', id('c'), Infinity);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.sub).toBe('a');
    expect(cache.get('c')?.sub).toBe('c');
  });

  it('never serves an entry past the token validity or maxAge', () => {
    const cache = new VerifiedTokenCache(10, 60_000);
    cache.set('short', id('s'), 1_000 + 5_000, 1_000);
    cache.set('long', id('l'), Infinity, 1_000);
    expect(cache.get('short', 5_999)?.sub).toBe('s');
    expect(cache.get('short', 6_000)).toBeUndefined();
    expect(cache.get('long', 60_999)?.sub).toBe('l');
    expect(cache.get('long', 61_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('hands out copies', () => {
    const cache = new VerifiedTokenCache(10);
    cache.set('k', id('k'), Infinity);
    cache.get('k')!.scopes.push('mcp:admin');
    expect(cache.get('k')!.scopes).toEqual(['a']);
  });

  it('looks a token up by its hash, and never a token over the length cap', () => {
    const cache = new VerifiedTokenCache(10);
    const token = signRaw(HS256, goodClaims());
    cache.set(VerifiedTokenCache.keyOf(token), id('t'), Infinity);
    expect(cache.lookup(token)?.sub).toBe('t');
    expect(cache.lookup(`${token}x`)).toBeUndefined();
    const huge = 'x'.repeat(MAX_TOKEN_LENGTH + 1);
    cache.set(VerifiedTokenCache.keyOf(huge), id('h'), Infinity);
    expect(cache.lookup(huge)).toBeUndefined();
  });

  it('keys by a hash, not the token', () => {
    const token = signRaw(HS256, goodClaims());
    expect(VerifiedTokenCache.keyOf(token)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('the JWT verifier with its cache', () => {
  afterEach(() => vi.useRealTimers());

  it('refuses a cached token once it expires', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const verify = createJwtVerifier({ secret: SECRET, clockToleranceSec: 0 });
    const token = signRaw(HS256, goodClaims({ exp: now() + 5 }));
    expect((await verify(token)).sub).toBe('user-1');
    expect((await verify(token)).sub).toBe('user-1'); // served from the cache
    vi.setSystemTime(Date.now() + 6_000);
    await expect(verify(token)).rejects.toMatchObject({ appCode: 'INVALID_TOKEN', message: 'token expired' });
  });

  it('does not let a caller change the identity of later requests', async () => {
    const auth = createAuthenticator(resolveConfig({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET } }));
    const token = signRaw(HS256, goodClaims());
    const first = await auth(token);
    if (!first.ok) throw first.error;
    first.identity.scopes.push('mcp:admin');
    first.identity.isAdmin = true;
    expect(await auth(token)).toMatchObject({ ok: true, identity: { isAdmin: false, scopes: ['mcp', 'mcp:call'] } });
  });

  it('does not cache refusals', async () => {
    const verify = createJwtVerifier({ secret: SECRET, requiredScopes: ['mcp:admin'] });
    const token = signRaw(HS256, goodClaims());
    await expect(verify(token)).rejects.toMatchObject({ appCode: 'INSUFFICIENT_SCOPE' });
    await expect(verify(token)).rejects.toMatchObject({ appCode: 'INSUFFICIENT_SCOPE' });
  });
});
