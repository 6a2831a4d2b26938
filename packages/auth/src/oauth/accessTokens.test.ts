import { createRuntime, MemoryStorage, resolveConfig } from '@ai-backend/core/internal';
import { base64url, decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENCRYPTION_KEY, form, memoryLogger, obtainTokens, register, startHarness, type Harness } from './__tests__/harness.js';
import { createOAuthRoutes } from './createOAuthRoutes.js';

let h: Harness;
afterEach(() => h?.close());

function reencode(token: string, header: Record<string, unknown>, payload?: Record<string, unknown>): string {
  const [, p, s] = token.split('.');
  const enc = (o: unknown) => base64url.encode(JSON.stringify(o));
  return `${enc(header)}.${payload ? enc(payload) : p}.${s}`;
}

describe('verifyAccessToken', () => {
  it('refuses forged and altered tokens', async () => {
    h = await startHarness();
    const client = await register(h);
    const { access_token: good } = await obtainTokens(h, client.client_id);
    const header = JSON.parse(Buffer.from(good.split('.')[0]!, 'base64url').toString());
    const claims = decodeJwt(good);
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT(claims).setProtectedHeader(header).sign(privateKey);
    const embedded = await new SignJWT(claims).setProtectedHeader({ ...header, jwk: await exportJWK(publicKey) }).sign(privateKey);
    const hostile = [
      forged, // right kid, wrong key
      embedded, // embedded jwk is never used
      reencode(good, header, { ...claims, sub: 'admin' }), // tampered payload
      reencode(good, { ...header, alg: 'none' }),
      reencode(good, { ...header, alg: 'HS256' }),
      reencode(good, { ...header, kid: '../../etc/passwd' }),
      reencode(good, { ...header, typ: 'JWT' }),
      good.split('.').slice(0, 2).join('.') + '.',
      'garbage',
    ];
    for (const token of hostile) await expect(h.oauth.verifyAccessToken(token), token).rejects.toMatchObject({ appCode: 'INVALID_TOKEN' });
    expect(await h.oauth.verifyAccessToken(good)).toMatchObject({ sub: h.userId });
  });

  it('refuses a token whose resource is not the one asked for', async () => {
    h = await startHarness();
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id);
    await expect(h.oauth.verifyAccessToken(access_token, { resource: 'http://other.test/mcp' })).rejects.toMatchObject({
      appCode: 'INVALID_TOKEN',
    });
    expect(await h.oauth.verifyAccessToken(access_token, { resource: 'http://auth.test/mcp' })).toMatchObject({ sub: h.userId });
  });

  it('with publicUrl configured, refuses tokens minted for another issuer', async () => {
    h = await startHarness();
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id); // iss http://auth.test
    const runtime = await createRuntime(
      resolveConfig({ storage: { type: 'memory' }, oauth: { ...h.runtime.config.oauth, publicUrl: 'https://api.example.com' } }),
      { storage: h.storage, logger: memoryLogger() },
    );
    const strict = createOAuthRoutes(runtime);
    await expect(strict.verifyAccessToken(access_token)).rejects.toMatchObject({ appCode: 'INVALID_TOKEN' });
    await strict.close();
  });

  it("a changed encryptionKey makes old tokens fail as 'session not found'", async () => {
    const storage = new MemoryStorage();
    h = await startHarness({}, undefined, storage);
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id);
    const oauth = { ...h.runtime.config.oauth, encryptionKey: 'z'.repeat(40) };
    const runtime = await createRuntime(resolveConfig({ storage: { type: 'memory' }, oauth }), { storage, logger: memoryLogger() });
    const rekeyed = createOAuthRoutes(runtime);
    await expect(rekeyed.verifyAccessToken(access_token)).rejects.toMatchObject({
      appCode: 'SESSION_NOT_FOUND',
      message: 'session not found',
    });
    // Same key again: still fine.
    const same = createOAuthRoutes(
      await createRuntime(resolveConfig({ storage: { type: 'memory' }, oauth: { ...oauth, encryptionKey: ENCRYPTION_KEY } }), {
        storage,
        logger: memoryLogger(),
      }),
    );
    expect(await same.verifyAccessToken(access_token)).toMatchObject({ sub: h.userId });
    await rekeyed.close();
    await same.close();
  });

  it('a token verified (and cached) before its session is revoked is refused afterwards', async () => {
    h = await startHarness();
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    expect(await h.oauth.verifyAccessToken(t.access_token)).toMatchObject({ sub: h.userId });
    const next = await (
      await h.request('/oauth/token', form({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: client.client_id }))
    ).json();
    expect(await h.oauth.verifyAccessToken(next.access_token)).toMatchObject({ sub: h.userId });
    await h.request('/oauth/token', form({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: client.client_id }));
    await expect(h.oauth.verifyAccessToken(next.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
  });

  it('a verification that read the session before its revocation does not cache it', async () => {
    // The session's read returns what it found only after the session was revoked.
    let revoked!: () => void;
    const revocation = new Promise<void>((r) => (revoked = r));
    let read!: () => void;
    const sessionRead = new Promise<void>((r) => (read = r));
    let paused = false;
    class PausingStorage extends MemoryStorage {
      override async get<T>(key: string): Promise<T | undefined> {
        const found = await super.get<T>(key);
        if (paused && key.startsWith('oauth:session:')) {
          paused = false;
          read();
          await revocation;
        }
        return found;
      }
    }
    h = await startHarness({ oauth: { sessionCacheMs: 60_000 } }, undefined, new PausingStorage());
    const client = await register(h);
    const t = await obtainTokens(h, client.client_id);
    paused = true;
    const verifying = h.oauth.verifyAccessToken(t.access_token).then(
      () => 'accepted',
      () => 'refused',
    );
    await sessionRead;
    const out = await h.request('/oauth/revoke', form({ token: t.refresh_token, client_id: client.client_id }));
    expect(out.status).toBe(200);
    revoked();
    await verifying;
    // Within the minute the session would stay cached: refused all the same.
    await expect(h.oauth.verifyAccessToken(t.access_token)).rejects.toMatchObject({ appCode: 'SESSION_NOT_FOUND' });
  });

  it('a cached token stops working when it expires', async () => {
    h = await startHarness({ oauth: { accessTokenTtlSec: 60 } });
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id);
    expect(await h.oauth.verifyAccessToken(access_token)).toMatchObject({ sub: h.userId });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 95_000); // past exp plus the 30 s clock tolerance
      await expect(h.oauth.verifyAccessToken(access_token)).rejects.toMatchObject({ appCode: 'INVALID_TOKEN', message: 'token expired' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('marks configured administrators as admins', async () => {
    h = await startHarness({ admin: { users: ['alice@example.com'] } });
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id);
    expect(await h.oauth.verifyAccessToken(access_token)).toMatchObject({ isAdmin: true });
  });

  it('verifies without reading the store once the session is cached', async () => {
    // Counted, not timed: a per-call time bound is what a loaded machine breaks. The cache is kept
    // for its longest (60 s) so the 500 calls fall within it however slowly they run.
    let reads = 0;
    const storage = new Proxy(new MemoryStorage(), {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (prop === 'get' || prop === 'getMany' || prop === 'keys' || prop === 'readLog' || prop === 'transact') reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    h = await startHarness({ oauth: { sessionCacheMs: 60_000 } }, undefined, storage);
    const client = await register(h);
    const { access_token } = await obtainTokens(h, client.client_id);
    expect(await h.oauth.verifyAccessToken(access_token)).toMatchObject({ sub: h.userId });
    const before = reads;
    for (let i = 0; i < 500; i++) expect(await h.oauth.verifyAccessToken(access_token)).not.toBeNull();
    expect(reads - before).toBe(0);
  });
});
