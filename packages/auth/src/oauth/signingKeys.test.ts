import { MemoryStorage } from '@ai-backend/core';
import { jwtVerify, SignJWT } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import { SessionStore } from './sessionStore.js';
import { SigningKeys } from './signingKeys.js';

const OPTS = { alg: 'ES256' as const, rotateAfterMs: 86_400_000, retainMs: 3_900_000 };

async function sign(keys: SigningKeys): Promise<string> {
  const { kid, alg, key } = await keys.signingKey();
  return new SignJWT({}).setProtectedHeader({ alg, kid }).setExpirationTime('1h').sign(key);
}

async function verifies(keys: SigningKeys, token: string): Promise<boolean> {
  const kid = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
  const found = await keys.verificationKey(kid);
  if (!found) return false;
  return jwtVerify(token, found.key).then(
    () => true,
    () => false,
  );
}

describe('SigningKeys', () => {
  it('persists the key: a second instance (restart) signs with the same key and verifies old tokens', async () => {
    const storage = new MemoryStorage();
    const a = await SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS);
    const token = await sign(a);
    const b = await SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS);
    expect((await b.signingKey()).kid).toBe((await a.signingKey()).kid);
    expect(await verifies(b, token)).toBe(true);
    expect(b.jwks().keys).toHaveLength(1);
    expect(b.jwks().keys[0]).not.toHaveProperty('d');
  });

  it('concurrent first starts agree on one key', async () => {
    const storage = new MemoryStorage();
    const [a, b] = await Promise.all([
      SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS),
      SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS),
    ]);
    expect((await a.signingKey()).kid).toBe((await b.signingKey()).kid);
  });

  it('rotation keeps the previous key published and trusted', async () => {
    const keys = await SigningKeys.open(new SessionStore(new MemoryStorage(), 'x'.repeat(32)), OPTS);
    const before = await sign(keys);
    const oldKid = (await keys.signingKey()).kid;
    const newKid = await keys.rotate();
    expect(newKid).not.toBe(oldKid);
    expect((await keys.signingKey()).kid).toBe(newKid);
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
    expect(await verifies(keys, before)).toBe(true);
  });

  it('drops a retired key once its tokens can no longer be valid', async () => {
    const keys = await SigningKeys.open(new SessionStore(new MemoryStorage(), 'x'.repeat(32)), { ...OPTS, retainMs: 20 });
    const oldKid = (await keys.signingKey()).kid;
    vi.useFakeTimers({ toFake: ['Date'] }); // the clock moves on; nothing waits
    try {
      await keys.rotate();
      vi.setSystemTime(Date.now() + 30);
      await keys.rotate();
      expect(keys.jwks().keys.map((k) => k.kid)).not.toContain(oldKid);
    } finally {
      vi.useRealTimers();
    }
  });

  it('another instance picks up a rotation when it meets the new kid', async () => {
    const storage = new MemoryStorage();
    const a = await SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS);
    const b = await SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS);
    await a.rotate();
    expect(await verifies(b, await sign(a))).toBe(true);
  });

  it('after an encryption-key change it signs with a new key but still knows the old public key', async () => {
    const storage = new MemoryStorage();
    const a = await SigningKeys.open(new SessionStore(storage, 'x'.repeat(32)), OPTS);
    const old = await sign(a);
    const b = await SigningKeys.open(new SessionStore(storage, 'y'.repeat(32)), OPTS);
    expect((await b.signingKey()).kid).not.toBe((await a.signingKey()).kid);
    expect(await verifies(b, old)).toBe(true);
  });

  it('can use RS256', async () => {
    const keys = await SigningKeys.open(new SessionStore(new MemoryStorage(), 'x'.repeat(32)), { ...OPTS, alg: 'RS256' });
    expect(keys.jwks().keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(await verifies(keys, await sign(keys))).toBe(true);
  });
});
