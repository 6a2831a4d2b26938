import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { createTestUpstream, type TestUpstream } from '@ai-backend/test-utils';
import { admin, alice, backends, bob, call, makeRuntime, type OpenStore } from '../../services/billing/__tests__/kit.js';

const ALICE_KEY = 'sk-alice-SECRET-openai-key-0001';
const BOB_KEY = 'sk-bob-SECRET-openai-key-0002';

describe.each(backends)('auth router (BYOK keys) on $name', (backend) => {
  let upstream: TestUpstream;
  let store: OpenStore;
  let rt: Runtime;
  const logs: string[] = [];
  const responses: unknown[] = [];
  const as = async <T = any>(who: typeof alice, path: string, input: unknown): Promise<T> => {
    const out = await call<T>(rt, path, input, who);
    responses.push(out);
    return out;
  };

  beforeAll(async () => {
    await backend.setup?.();
    upstream = await createTestUpstream();
  });
  afterAll(async () => upstream.close());
  beforeEach(async () => {
    logs.length = 0;
    responses.length = 0;
    store = await backend.open('auth-router');
    rt = await makeRuntime(store.storage, { ai: upstream.aiConfig() }, logs);
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it.each(['storeUserKey', 'getUserKey', 'getUserProviders', 'rotateUserKey', 'deleteUserKey', 'validateUserKey'])(
    'auth.%s needs an identity',
    async (name) => {
      await expect(
        call(rt, `auth.${name}`, { email: alice.email, provider: 'openai', apiKey: ALICE_KEY, newApiKey: ALICE_KEY }, null),
      ).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    },
  );

  it('a user stores, reads status of, lists, rotates and deletes their own key (by email, any case, or by sub)', async () => {
    expect(await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY })).toMatchObject({
      success: true,
      exists: true,
      provider: 'openai',
      last4: '0001',
    });
    expect(await as(alice, 'auth.getUserKey', { email: 'ALICE@example.com', provider: 'provider_b' })).toMatchObject({
      exists: true,
      provider: 'openai',
      last4: '0001',
    });
    expect(await as(alice, 'auth.getUserProviders', { email: alice.sub })).toEqual({ providers: ['openai'] });
    expect(
      await as(alice, 'auth.rotateUserKey', { email: alice.email, provider: 'openai', newApiKey: 'sk-alice-SECRET-rotated-9999' }),
    ).toMatchObject({ success: true, last4: '9999', rotatedAt: expect.any(String) });
    expect(await rt.vault.reveal(alice.sub, 'openai')).toBe('sk-alice-SECRET-rotated-9999');
    expect(await as(alice, 'auth.deleteUserKey', { email: alice.email, provider: 'openai' })).toMatchObject({
      success: true,
      deleted: true,
    });
    expect(await as(alice, 'auth.getUserKey', { email: alice.email, provider: 'openai' })).toEqual({ exists: false, provider: 'openai' });
    await expect(as(alice, 'auth.rotateUserKey', { email: alice.email, provider: 'openai', newApiKey: ALICE_KEY })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it("user B cannot read, list, replace, rotate, delete or validate user A's key", async () => {
    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY });
    await as(bob, 'auth.storeUserKey', { email: bob.email, provider: 'openai', apiKey: BOB_KEY });
    for (const email of [alice.email, alice.sub, 'Alice@Example.com']) {
      for (const [path, extra] of [
        ['auth.getUserKey', {}],
        ['auth.getUserProviders', {}],
        ['auth.storeUserKey', { apiKey: BOB_KEY }],
        ['auth.rotateUserKey', { newApiKey: BOB_KEY }],
        ['auth.deleteUserKey', {}],
        ['auth.validateUserKey', {}],
      ] as const) {
        await expect(call(rt, path, { email, provider: 'openai', ...extra }, bob), `${path} as bob on ${email}`).rejects.toMatchObject({
          code: 'FORBIDDEN',
        });
      }
    }
    expect(await rt.vault.reveal(alice.sub, 'openai')).toBe(ALICE_KEY);
    expect(await rt.vault.reveal(bob.sub, 'openai')).toBe(BOB_KEY);
  });

  it('an administrator may manage another user by email (once seen) or by sub', async () => {
    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'google', apiKey: ALICE_KEY });
    expect(await as(admin, 'auth.getUserKey', { email: alice.email, provider: 'google' })).toMatchObject({ exists: true, last4: '0001' });
    expect(await as(admin, 'auth.getUserProviders', { email: alice.sub })).toEqual({ providers: ['google'] });
    expect(await as(admin, 'auth.deleteUserKey', { email: alice.email, provider: 'google' })).toMatchObject({ deleted: true });
    expect(await rt.vault.has(alice.sub, 'google')).toBe(false);
  });

  it('the e-mail index is claimed only by verified e-mails, first claim stands (no overwrite)', async () => {
    // Mallory's token claims Alice's address: unverified first, then "verified" by another issuer.
    const unverified = { ...alice, sub: 'mallory-1', emailVerified: false };
    const conflicting = { ...alice, sub: 'mallory-2', emailVerified: true };
    await as(unverified, 'auth.getUserProviders', { email: unverified.sub });
    expect(await as(admin, 'auth.getUserProviders', { email: alice.email })).toEqual({ providers: [] });
    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY });
    await as(conflicting, 'auth.getUserProviders', { email: conflicting.sub });
    await as(unverified, 'auth.getUserProviders', { email: unverified.sub });
    // The administrator naming alice@example.com still reaches Alice, not Mallory.
    expect(await as(admin, 'auth.getUserKey', { email: alice.email, provider: 'openai' })).toMatchObject({ exists: true, last4: '0001' });
    expect(logs.some((l) => l.includes('e-mail index claim refused'))).toBe(true);
  });

  it('validateUserKey checks the stored key with the provider and records the time', async () => {
    await expect(as(alice, 'auth.validateUserKey', { email: alice.email, provider: 'openai' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY });
    const ok = await as(alice, 'auth.validateUserKey', { email: alice.email, provider: 'openai' });
    expect(ok).toMatchObject({ provider: 'openai', valid: true, validatedAt: expect.any(String) });
    expect(upstream.requests.at(-1)).toMatchObject({ apiKey: ALICE_KEY, format: 'models' });
    expect((await as(alice, 'auth.getUserKey', { email: alice.email, provider: 'openai' })).validatedAt).toBe(ok.validatedAt);

    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'anthropic', apiKey: 'invalid-SECRET-anthropic-key' });
    const bad = await as(alice, 'auth.validateUserKey', { email: alice.email, provider: 'provider_a' });
    expect(bad).toMatchObject({ provider: 'anthropic', valid: false, reason: 'invalid_key' });
    expect(bad.validatedAt).toBeUndefined();
  });

  it('accepts the three key providers and their aliases only', async () => {
    await expect(as(alice, 'auth.getUserKey', { email: alice.email, provider: 'openrouter' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(as(alice, 'auth.getUserKey', { email: alice.email, provider: 'provider_d' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await as(alice, 'auth.getUserKey', { email: alice.email, provider: 'provider_c' })).toEqual({
      exists: false,
      provider: 'google',
    });
    await expect(as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: 'abc' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
  });

  it('keys never appear in responses, logs or the store in plain text', async () => {
    await as(alice, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY });
    await as(alice, 'auth.rotateUserKey', { email: alice.email, provider: 'openai', newApiKey: 'sk-alice-SECRET-rotated-9999' });
    await as(alice, 'auth.validateUserKey', { email: alice.email, provider: 'openai' });
    await as(alice, 'auth.getUserKey', { email: alice.email, provider: 'openai' });
    await as(alice, 'auth.getUserProviders', { email: alice.email });
    await call(rt, 'auth.getUserKey', { email: alice.email, provider: 'openai' }, bob).catch((e: unknown) => responses.push(String(e)));
    expect(logs.some((l) => l.includes('vault: key stored'))).toBe(true);
    const haystacks = { responses: JSON.stringify(responses), logs: logs.join('\n'), store: await store.dump() };
    for (const [where, text] of Object.entries(haystacks)) {
      expect(text, where).not.toContain('SECRET');
    }
  });

  it('refuses to store keys when no vault key is configured', async () => {
    const bare = await makeRuntime(await store.another(), { billing: { vaultKey: undefined } });
    try {
      const err = await call(bare, 'auth.storeUserKey', { email: alice.email, provider: 'openai', apiKey: ALICE_KEY }, alice).catch(
        (e: unknown) => e,
      );
      expect(err).toMatchObject({
        code: 'PRECONDITION_FAILED',
        message: expect.stringContaining('billing.vaultKey or oauth.encryptionKey'),
      });
    } finally {
      if (backend.name === 'redis') await bare.close();
    }
  });
});
