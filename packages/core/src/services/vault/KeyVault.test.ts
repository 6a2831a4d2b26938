import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { backends, type OpenStore } from '../billing/__tests__/kit.js';
import { redactConfig } from '../../config/redact.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { KeyVault } from './KeyVault.js';

const MASTER = 'vault-master-key-one-0123456789abcdef';
const MASTER2 = 'vault-master-key-two-0123456789abcdef';
const KEY = 'sk-test-SECRET-abcdefghijklmnop-7890';

describe.each(backends)('KeyVault on $name', (backend) => {
  let store: OpenStore;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('vault');
  });
  afterEach(async () => {
    await store.storage.close();
    await store.cleanup();
  });

  it('stores keys encrypted: the store never holds the key in plain text; status shows at most the last four', async () => {
    const vault = new KeyVault(store.storage, { masterKey: MASTER });
    const status = await vault.store('alice', 'openai', KEY);
    expect(status).toEqual({ exists: true, provider: 'openai', last4: '7890', createdAt: expect.any(String) });
    expect(JSON.stringify(status)).not.toContain('SECRET');
    const dump = await store.dump();
    expect(dump).toContain('vault:');
    expect(dump).not.toContain(KEY);
    expect(dump).not.toContain('SECRET');
    expect(await vault.reveal('alice', 'openai')).toBe(KEY);
    expect(await vault.get('alice', 'google')).toEqual({ exists: false, provider: 'google' });
    expect(await vault.providers('alice')).toEqual(['openai']);
  });

  it('short keys show no last four characters', async () => {
    const vault = new KeyVault(store.storage, { masterKey: MASTER });
    expect((await vault.store('alice', 'openai', 'short-k1')).last4).toBeNull();
  });

  it('binds each ciphertext to its user and provider: a record copied to another slot does not decrypt', async () => {
    const vault = new KeyVault(store.storage, { masterKey: MASTER });
    await vault.store('alice', 'openai', KEY);
    const record = await store.storage.get('vault:alice:openai');
    await store.storage.set('vault:bob:openai', record);
    await store.storage.set('vault:alice:google', record);
    await expect(vault.reveal('bob', 'openai')).rejects.toMatchObject({ appCode: 'INTERNAL' });
    await expect(vault.reveal('alice', 'google')).rejects.toMatchObject({ appCode: 'INTERNAL' });
  });

  it('rotate keeps createdAt, sets rotatedAt and clears validatedAt; delete removes', async () => {
    const vault = new KeyVault(store.storage, { masterKey: MASTER });
    await expect(vault.rotate('alice', 'openai', KEY)).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    const first = await vault.store('alice', 'openai', KEY);
    expect((await vault.markValidated('alice', 'openai')).validatedAt).toEqual(expect.any(String));
    const rotated = await vault.rotate('alice', 'openai', 'sk-new-key-000000000000-1111');
    expect(rotated).toMatchObject({ exists: true, last4: '1111', createdAt: first.createdAt, rotatedAt: expect.any(String) });
    expect(rotated.validatedAt).toBeUndefined();
    expect(await vault.reveal('alice', 'openai')).toBe('sk-new-key-000000000000-1111');
    expect(await vault.remove('alice', 'openai')).toBe(true);
    expect(await vault.remove('alice', 'openai')).toBe(false);
    expect(await vault.reveal('alice', 'openai')).toBeUndefined();
  });

  it('refuses to store without a master key, with a clear error', async () => {
    const vault = new KeyVault(store.storage, {});
    expect(vault.configured).toBe(false);
    await expect(vault.store('alice', 'openai', KEY)).rejects.toMatchObject({
      appCode: 'NOT_CONFIGURED',
      message: expect.stringContaining('billing.vaultKey'),
    });
  });

  it('the master key can rotate: old records stay readable through previousKeys and are re-sealed', async () => {
    const v1 = new KeyVault(store.storage, { masterKey: MASTER });
    await v1.store('alice', 'openai', KEY);
    await v1.store('bob', 'google', 'AIza-bob-google-key-000000');
    const kidOf = async (slot: string) => (await store.storage.get<{ kid: string }>(slot))!.kid;
    const oldKid = await kidOf('vault:alice:openai');

    // A new master key alone cannot read old records.
    const without = new KeyVault(store.storage, { masterKey: MASTER2 });
    await expect(without.reveal('alice', 'openai')).rejects.toMatchObject({ appCode: 'INTERNAL' });

    const v2 = new KeyVault(store.storage, { masterKey: MASTER2, previousKeys: [MASTER] });
    expect(await v2.reveal('alice', 'openai')).toBe(KEY); // lazily re-sealed
    expect(await kidOf('vault:alice:openai')).not.toBe(oldKid);
    expect(await v2.rotateMasterKey()).toEqual({ rewritten: 1, failed: 0 });
    expect(await kidOf('vault:bob:google')).toBe(await kidOf('vault:alice:openai'));

    // After rotation the old master key is no longer needed.
    const only2 = new KeyVault(store.storage, { masterKey: MASTER2 });
    expect(await only2.reveal('bob', 'google')).toBe('AIza-bob-google-key-000000');
    expect(await store.dump()).not.toContain('AIza-bob');
  });

  it('rotation walks the vault a page at a time (more entries than a page), never one listing of every key', async () => {
    const v1 = new KeyVault(store.storage, { masterKey: MASTER });
    for (let i = 0; i < 210; i++) await v1.store(`user-${i}`, 'openai', `${KEY}-${i}`);
    const listed: string[] = [];
    const spied = new Proxy(store.storage, {
      get(target, prop, receiver) {
        if (prop === 'keys') return (prefix: string) => (listed.push(prefix), target.keys(prefix));
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const v2 = new KeyVault(spied, { masterKey: MASTER2, previousKeys: [MASTER] });
    expect(await v2.rotateMasterKey()).toEqual({ rewritten: 210, failed: 0 });
    expect(listed).toEqual([]);
    expect(await v2.rotateMasterKey()).toEqual({ rewritten: 0, failed: 0 });
    expect(await new KeyVault(store.storage, { masterKey: MASTER2 }).reveal('user-209', 'openai')).toBe(`${KEY}-209`);
  }, 120_000);
});

describe('vault configuration', () => {
  it('redacts the master keys in printed config', () => {
    const c = redactConfig(
      resolveConfig({ storage: { type: 'memory' }, billing: { vaultKey: MASTER2, previousVaultKeys: [MASTER], webhookSecret: MASTER } }),
    );
    expect(c.billing).toMatchObject({ vaultKey: '[redacted]', previousVaultKeys: ['[redacted]'], webhookSecret: '[redacted]' });
  });

  it('refuses master keys shorter than 32 characters', () => {
    expect(() => resolveConfig({ billing: { vaultKey: 'short' } })).toThrow(/billing\.vaultKey/);
    expect(() => resolveConfig({ billing: { previousVaultKeys: ['short'] } })).toThrow(/billing\.previousVaultKeys/);
  });
});
