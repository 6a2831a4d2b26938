import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import type { Identity } from '../../kernel/identity.js';
import { alice, backends, call, makeRuntime, type OpenStore } from '../billing/__tests__/kit.js';
import { waitFor } from '@ai-backend/test-utils';

/**
 * Authority is checked when a key is used, not when it was made (docs/security.md "When
 * authority is checked"): a key's administrator power follows its owner's listing in
 * `admin.users` on the instance serving the call, on every backend and across two runtimes
 * sharing one store; the admin scope is given only to a listed owner, whatever scopes the
 * owner's token carries. A key sees only itself among its owner's keys unless it holds
 * `keys:read`, and a rotated key's grace period cannot be extended.
 */
const listedAlice: Identity = { ...alice, isAdmin: true };
/** Alice after her removal from admin.users, still holding an OAuth token minted with mcp:admin. */
const demotedAlice: Identity = { ...alice, via: 'oauth', scopes: ['mcp', 'mcp:admin'], isAdmin: false };

async function asKey(runtime: Runtime, key: string): Promise<Identity> {
  const r = await runtime.authenticate(key);
  if (!r.ok) throw r.error;
  return r.identity;
}

describe.each(backends)('API key authority on $name', (backend) => {
  let store: OpenStore;
  let runtime: Runtime;
  const extra: Runtime[] = [];
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('keyauthority');
    runtime = await makeRuntime(store.storage, { admin: { users: [alice.sub] } });
  });
  afterEach(async () => {
    // memory and sqlite: the second runtime shares the first one's store object; closing it twice fails.
    if (backend.name !== 'memory' && backend.name !== 'sqlite') for (const r of extra) await r.close();
    extra.length = 0;
    await runtime.close();
    await store.cleanup();
  });

  async function instance(config: Parameters<typeof makeRuntime>[1]): Promise<Runtime> {
    const r = await makeRuntime(await store.another(), config);
    extra.push(r);
    return r;
  }

  it('an administrator key acts as one only while its owner is listed, on each instance at each call', async () => {
    const made = await call(runtime, 'keys.create', { name: 'ops', scopes: ['mcp:admin'] }, listedAlice);
    const onListing = await asKey(runtime, made.key);
    expect(onListing).toMatchObject({ isAdmin: true, scopes: ['mcp:admin'] });
    await expect(call(runtime, 'admin.status', undefined, onListing)).resolves.toBeDefined();

    // A second instance on the same store whose admin.users no longer lists alice.
    const demoted = await instance({});
    const onDemoted = await asKey(demoted, made.key);
    expect(onDemoted).toMatchObject({ isAdmin: false, scopes: [] });
    await expect(call(demoted, 'admin.status', undefined, onDemoted)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      call(demoted, 'billing.creditTokens', { userId: alice.sub, amount: 1_000_000, reason: 'x', idempotencyKey: 'k1' }, onDemoted),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(call(demoted, 'keys.adminList', { userId: 'someone' }, onDemoted)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('the admin scope is given only to a listed owner, not to one whose token still carries it', async () => {
    const demoted = await instance({});
    await expect(call(demoted, 'keys.create', { name: 'again', scopes: ['mcp:admin'] }, demotedAlice)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const plain = await call(demoted, 'keys.create', { name: 'plain' }, demotedAlice);
    await expect(call(demoted, 'keys.update', { id: plain.apiKey.id, scopes: ['mcp:admin'] }, demotedAlice)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    // Key scopes widen only what a key may call of its owner's: any owner may give them.
    const reader = await call(demoted, 'keys.update', { id: plain.apiKey.id, scopes: ['keys:read', 'account:read'] }, demotedAlice);
    expect(reader.apiKey.scopes).toEqual(['keys:read', 'account:read']);
    // An administrator making a key for someone not listed cannot give it either.
    const root: Identity = { ...alice, sub: 'user-root', isAdmin: true };
    const byAdmin = await instance({ admin: { users: ['user-root'] } });
    await expect(call(byAdmin, 'keys.adminCreate', { userId: 'user-carol', name: 'c', scopes: ['mcp:admin'] }, root)).rejects.toMatchObject(
      { code: 'FORBIDDEN' },
    );
  });

  it('an owner listed by verified e-mail: the key follows the stored profile', async () => {
    const byEmail = await instance({ admin: { users: [alice.email!] } });
    // Seen again on each poll, as her next call would: a profile write is fire and forget, and one
    // that fails (a new pool's connect timing out on a loaded machine) is only made again then.
    const seenAs = async (who: Identity) => {
      byEmail.users.seen(who);
      return (await byEmail.users.find(alice.sub)).profile;
    };
    await waitFor(async () => (await seenAs(alice))?.emailVerified === true);
    const made = await call(byEmail, 'keys.create', { name: 'mail', scopes: ['mcp:admin'] }, listedAlice);
    expect((await asKey(byEmail, made.key)).isAdmin).toBe(true);
    // Alice now signs in with an e-mail her issuer no longer vouches for: the listing stops matching.
    await waitFor(async () => (await seenAs({ ...alice, emailVerified: false }))?.emailVerified === undefined);
    const later = await instance({ admin: { users: [alice.email!] } });
    expect((await asKey(later, made.key)).isAdmin).toBe(false);
  });

  it("a key sees only itself among its owner's keys; keys:read sees them all", async () => {
    const one = await call(runtime, 'keys.create', { name: 'one' }, alice);
    const two = await call(runtime, 'keys.create', { name: 'two' }, alice);
    const reader = await call(runtime, 'keys.create', { name: 'reader', scopes: ['keys:read'] }, alice);
    const oneKey = await asKey(runtime, one.key);
    expect((await call(runtime, 'keys.list', {}, oneKey)).keys.map((k: { id: string }) => k.id)).toEqual([one.apiKey.id]);
    expect((await call(runtime, 'keys.get', { id: one.apiKey.id }, oneKey)).apiKey.id).toBe(one.apiKey.id);
    await expect(call(runtime, 'keys.get', { id: two.apiKey.id }, oneKey)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const readerKey = await asKey(runtime, reader.key);
    expect((await call(runtime, 'keys.list', {}, readerKey)).keys).toHaveLength(3);
    expect((await call(runtime, 'keys.get', { id: two.apiKey.id }, readerKey)).apiKey.name).toBe('two');
    // The owner, signed in, sees every key as before.
    expect((await call(runtime, 'keys.list', {}, alice)).keys).toHaveLength(3);

    // Nor through its owner's usage: spend per key and the key of each usage row.
    const twoKey = await asKey(runtime, two.key);
    for (const [who, requestId] of [
      [oneKey, 'by-one'],
      [twoKey, 'by-two'],
    ] as const)
      await runtime.billing.recordByokUsage({
        identity: who,
        provider: 'openai',
        model: 'gpt-x',
        tokensUsed: 5,
        estimatedCostUsd: 0,
        requestId,
      });
    const ids = (rows: Array<{ id?: string; apiKeyId?: string }>, field: 'id' | 'apiKeyId') =>
      rows
        .map((r) => r[field])
        .filter((id) => id !== undefined)
        .sort();
    const asOne = await call(runtime, 'billing.getUsageAnalytics', { includeHistory: true }, oneKey);
    expect(ids(asOne.byApiKey, 'id')).toEqual([one.apiKey.id]);
    expect(ids(asOne.history, 'apiKeyId')).toEqual([one.apiKey.id]);
    expect(asOne.history).toHaveLength(2);
    expect(ids((await call(runtime, 'billing.getUsageHistory', {}, oneKey)).usage, 'apiKeyId')).toEqual([one.apiKey.id]);
    const asReader = await call(runtime, 'billing.getUsageAnalytics', { includeHistory: true }, readerKey);
    expect(ids(asReader.byApiKey, 'id')).toEqual([one.apiKey.id, two.apiKey.id, reader.apiKey.id].sort());
    expect(ids(asReader.history, 'apiKeyId')).toEqual([one.apiKey.id, two.apiKey.id].sort());
    expect(ids((await call(runtime, 'billing.getUsageHistory', {}, alice)).usage, 'apiKeyId')).toHaveLength(2);
  });

  it("a rotated key's expiry can be brought forward, never extended or removed", async () => {
    const k = await call(runtime, 'keys.create', { name: 'r' }, alice);
    const rotated = await call(runtime, 'keys.rotate', { id: k.apiKey.id, graceSec: 600 }, alice);
    const end = Date.parse(rotated.previous.expiresAt);
    for (const expiresAt of [null, new Date(end + 60_000).toISOString(), '2099-01-01T00:00:00Z']) {
      await expect(call(runtime, 'keys.update', { id: k.apiKey.id, expiresAt }, alice)).rejects.toMatchObject({ code: 'CONFLICT' });
    }
    const sooner = new Date(end - 300_000).toISOString();
    expect((await call(runtime, 'keys.update', { id: k.apiKey.id, expiresAt: sooner }, alice)).apiKey.expiresAt).toBe(sooner);
    // An expiry written with an offset is the instant it names: a rotation's grace period does
    // not outlast it, and it is stored in UTC.
    const soon = Date.now() + 60_000;
    const offset = new Date(soon + 14 * 3600_000).toISOString().replace('Z', '+14:00');
    const short = await call(runtime, 'keys.create', { name: 'short', expiresAt: offset }, alice);
    expect(short.apiKey.expiresAt).toBe(new Date(soon).toISOString());
    const graced = await call(runtime, 'keys.rotate', { id: short.apiKey.id, graceSec: 36_000 }, alice);
    expect(Date.parse(graced.previous.expiresAt)).toBe(soon);
    // An administrator cannot extend it either.
    const admin = await instance({ admin: { users: ['user-root'] } });
    await expect(
      call(admin, 'keys.adminUpdate', { id: k.apiKey.id, expiresAt: null }, { ...alice, sub: 'user-root', isAdmin: true }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});
