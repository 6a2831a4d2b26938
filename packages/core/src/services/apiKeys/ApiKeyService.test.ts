import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import type { Storage } from '../../kernel/Storage.js';
import { admin, alice, backends, call, makeRuntime, type OpenStore } from '../billing/__tests__/kit.js';
import type { Identity } from '../../kernel/identity.js';
import { configFromEnv } from '../../config/fromEnv.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createRuntime } from '../../createRuntime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { LateReads } from '../../storage/__tests__/LateReads.js';

/** A store that counts every call, to prove hostile keys are refused without a lookup. */
function counting(inner: Storage): Storage & { calls: number } {
  const out = { calls: 0 } as Storage & { calls: number };
  for (const m of [
    'get',
    'set',
    'delete',
    'compareAndSet',
    'increment',
    'keys',
    'append',
    'readLog',
    'getMany',
    'transact',
    'dueKeys',
    'health',
    'close',
  ] as const) {
    (out as any)[m] = (...args: unknown[]) => {
      out.calls++;
      return (inner as any)[m](...args);
    };
  }
  Object.defineProperty(out, 'kind', { get: () => inner.kind });
  return out;
}

describe.each(backends)('API keys on $name', (backend) => {
  let store: OpenStore;
  let runtime: Runtime;
  const logs: string[] = [];
  const aliceScoped: Identity = { ...alice, scopes: ['mcp', 'mcp:call'] };
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('apikeys');
    logs.length = 0;
    runtime = await makeRuntime(store.storage, {}, logs);
  });
  afterEach(async () => {
    await runtime.close();
    await store.cleanup();
  });

  it('creates a key shown once, stored only as a keyed hash, that acts as its owner with its own rules', async () => {
    const created = await call(
      runtime,
      'keys.create',
      { name: 'ci', scopes: ['mcp'], models: ['gpt-4o*'], metadata: { team: 'infra' } },
      aliceScoped,
    );
    expect(created.key).toMatch(/^aib_[0-9A-Za-z]{50}$/);
    expect(created.apiKey).toMatchObject({
      name: 'ci',
      userId: alice.sub,
      scopes: ['mcp'],
      status: 'active',
      prefix: `aib_${created.apiKey.id}`,
      metadata: { team: 'infra' },
    });
    expect(created.apiKey.hash).toBeUndefined();
    const auth = await runtime.authenticate(created.key);
    expect(auth).toMatchObject({
      ok: true,
      identity: { sub: alice.sub, scopes: ['mcp'], isAdmin: false, via: 'apiKey', apiKey: { id: created.apiKey.id, models: ['gpt-4o*'] } },
    });
    const listed = await call(runtime, 'keys.list', {}, alice);
    expect(listed.keys.map((k: any) => k.id)).toEqual([created.apiKey.id]);
    const got = await call(runtime, 'keys.get', { id: created.apiKey.id }, alice);
    expect(got.apiKey.id).toBe(created.apiKey.id);
    expect(got.usage.periods.map((p: any) => p.period)).toEqual(['day', 'month', 'total']);
    // Nowhere after creation: not in answers, the store, or the logs.
    const secretPart = created.key.slice(16);
    expect(JSON.stringify([listed, got])).not.toContain(secretPart);
    expect(await store.dump()).not.toContain(secretPart);
    expect(logs.join('\n')).not.toContain(secretPart);
  });

  it('refuses scopes the owner does not hold, and other users see no key of alice', async () => {
    await expect(call(runtime, 'keys.create', { name: 'x', scopes: ['mcp:admin'] }, aliceScoped)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const { apiKey } = await call(runtime, 'keys.create', { name: 'x' }, alice);
    const bob: Identity = { ...alice, sub: 'user-bob' };
    await expect(call(runtime, 'keys.get', { id: apiKey.id }, bob)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(call(runtime, 'keys.revoke', { id: apiKey.id }, bob)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await call(runtime, 'keys.list', {}, bob)).keys).toEqual([]);
    await expect(call(runtime, 'keys.adminList', { userId: alice.sub }, alice)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('admin variants act on any user; a key cannot manage keys', async () => {
    const made = await call(runtime, 'keys.adminCreate', { userId: alice.sub, name: 'for alice' }, admin);
    expect(made.apiKey).toMatchObject({ userId: alice.sub, createdBy: admin.sub });
    expect((await call(runtime, 'keys.adminList', { userId: alice.sub }, admin)).keys).toHaveLength(1);
    const updated = await call(
      runtime,
      'keys.adminUpdate',
      { id: made.apiKey.id, name: 'renamed', limits: { requestsPerMinute: 5 } },
      admin,
    );
    expect(updated.apiKey).toMatchObject({ name: 'renamed', limits: { requestsPerMinute: 5 } });
    const asKey = await runtime.authenticate(made.key);
    if (!asKey.ok) throw asKey.error;
    await expect(call(runtime, 'keys.create', { name: 'escape' }, asKey.identity)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await call(runtime, 'keys.adminRevoke', { id: made.apiKey.id }, admin);
    expect(await runtime.authenticate(made.key)).toMatchObject({
      ok: false,
      error: { appCode: 'INVALID_TOKEN', message: 'API key revoked' },
    });
  });

  it('revoke, expiry, client addresses and rotation with and without grace', async () => {
    const a = await call(runtime, 'keys.create', { name: 'a', allowedIps: ['10.1.0.0/16', '::1'] }, alice);
    expect((await runtime.authenticate(a.key, { ip: '10.1.2.3' })).ok).toBe(true);
    expect((await runtime.authenticate(a.key, { ip: '::ffff:10.1.2.3' })).ok).toBe(true);
    expect(await runtime.authenticate(a.key, { ip: '10.2.0.1' })).toMatchObject({ ok: false, error: { appCode: 'FORBIDDEN' } });
    expect((await runtime.authenticate(a.key)).ok).toBe(false);

    // The key service reads the wall clock (no clock to inject): the expiry is far enough ahead
    // that creating the key and using it once fit before it on a loaded machine, and the refusal
    // after it is awaited rather than slept for.
    const soon = new Date(Date.now() + 2000).toISOString();
    const e = await call(runtime, 'keys.create', { name: 'e', expiresAt: soon }, alice);
    expect((await runtime.authenticate(e.key)).ok).toBe(true);
    await vi.waitFor(
      async () => expect(await runtime.authenticate(e.key)).toMatchObject({ ok: false, error: { message: 'API key expired' } }),
      {
        timeout: 10_000,
        interval: 100,
      },
    );
    await expect(call(runtime, 'keys.create', { name: 'past', expiresAt: '2020-01-01T00:00:00Z' }, alice)).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });

    const r = await call(runtime, 'keys.create', { name: 'r', models: ['x*'] }, alice);
    const rotated = await call(runtime, 'keys.rotate', { id: r.apiKey.id }, alice);
    expect(rotated.key).not.toBe(r.key);
    expect(rotated.apiKey).toMatchObject({ name: 'r', models: ['x*'] });
    expect(rotated.previous).toMatchObject({ status: 'revoked', rotatedTo: rotated.apiKey.id });
    expect((await runtime.authenticate(r.key)).ok).toBe(false);
    expect((await runtime.authenticate(rotated.key)).ok).toBe(true);
    const graced = await call(runtime, 'keys.rotate', { id: rotated.apiKey.id, graceSec: 60 }, alice);
    expect((await runtime.authenticate(rotated.key)).ok).toBe(true);
    expect((await runtime.authenticate(graced.key)).ok).toBe(true);
    expect(Date.parse(graced.previous.expiresAt)).toBeGreaterThan(Date.now() + 50_000);
    // A key in its grace period is not rotated again (its successor is); nor is a revoked one.
    await expect(call(runtime, 'keys.rotate', { id: rotated.apiKey.id }, alice)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(call(runtime, 'keys.rotate', { id: r.apiKey.id }, alice)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it("two rotations racing: one wins, the loser's new key is revoked", async () => {
    const k = await call(runtime, 'keys.create', { name: 'race' }, alice);
    const outcomes = await Promise.allSettled([
      call(runtime, 'keys.rotate', { id: k.apiKey.id }, alice),
      call(runtime, 'keys.rotate', { id: k.apiKey.id }, alice),
    ]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const active = (await call(runtime, 'keys.list', {}, alice)).keys.map((x: any) => x.id);
    expect(active).toEqual([(won[0] as PromiseFulfilledResult<any>).value.apiKey.id]);
  });

  it('a revocation reaches a second instance: on its next call where no signal can tell it, else within one second', async () => {
    const second = await makeRuntime(await store.another());
    try {
      const k = await call(runtime, 'keys.create', { name: 'two' }, alice);
      expect((await second.authenticate(k.key)).ok).toBe(true);
      await call(runtime, 'keys.revoke', { id: k.apiKey.id }, alice);
      // Two runtimes on one shared store with process-local signals (as PostgreSQL without Redis):
      // the second reads the key again on every request. memory and sqlite have one server by construction.
      if (backend.name === 'postgres' || backend.name === 'redis')
        expect(await second.authenticate(k.key)).toMatchObject({ ok: false, error: { message: 'API key revoked' } });
      await new Promise((r) => setTimeout(r, 1_050));
      expect(await second.authenticate(k.key)).toMatchObject({ ok: false, error: { message: 'API key revoked' } });
    } finally {
      if (backend.name !== 'memory' && backend.name !== 'sqlite') await second.close();
    }
  });

  it('hostile keys are refused without a store lookup', async () => {
    const probe = counting(store.storage);
    const rt = await makeRuntime(probe);
    try {
      const { key } = await call(rt, 'keys.create', { name: 'h' }, alice);
      const before = probe.calls;
      const flipped = key.slice(0, 30) + (key[30] === 'a' ? 'b' : 'a') + key.slice(31);
      const foreignRt = await makeRuntime(store.storage, { billing: { vaultKey: 'another-vault-key-of-another-server-0123' } });
      const foreign = (await call(foreignRt, 'keys.create', { name: 'f' }, alice)).key;
      await foreignRt.close().catch(() => undefined);
      const after = probe.calls;
      for (const bad of [
        key.slice(0, 40),
        `${key}x`,
        flipped,
        key.slice(0, -1) + (key.at(-1) === 'Z' ? 'Y' : 'Z'),
        'aib_',
        `aib_${'0'.repeat(50)}`,
        foreign,
        'aib_\u0000',
      ]) {
        const r = await rt.authenticate(bad);
        expect(r).toMatchObject({ ok: false, error: { appCode: 'INVALID_TOKEN', message: 'invalid API key' } });
        if (bad.length > 12) expect(JSON.stringify(r)).not.toContain(bad.slice(8));
      }
      expect(probe.calls).toBe(after);
      expect(after).toBeGreaterThanOrEqual(before);
    } finally {
      if (backend.name !== 'memory' && backend.name !== 'sqlite') await rt.close();
    }
  });
});

describe('API key configuration', () => {
  it('reads API_KEY_SECRET, refuses a short secret, and keys are off without any secret', async () => {
    expect(configFromEnv({ API_KEY_SECRET: 'k'.repeat(32) })).toMatchObject({ apiKeys: { secret: 'k'.repeat(32) } });
    expect(() => resolveConfig({ apiKeys: { secret: 'short' } })).toThrow(/32 bytes/);
    const bare = await createRuntime(resolveConfig({ storage: { type: 'memory' } }), { storage: new MemoryStorage() });
    try {
      expect(bare.keys.enabled).toBe(false);
      await expect(call(bare, 'keys.create', { name: 'x' }, alice)).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' });
      expect(await bare.authenticate(`aib_${'a'.repeat(50)}`)).toMatchObject({ ok: false, error: { appCode: 'INVALID_TOKEN' } });
    } finally {
      await bare.close();
    }
  });

  it('a key made under one secret is refused under another (the secret keys the hash and the id tag)', async () => {
    const storage = new MemoryStorage();
    const one = await createRuntime(resolveConfig({ storage: { type: 'memory' }, apiKeys: { secret: 'one-'.repeat(8) } }), { storage });
    const { key } = await call(one, 'keys.create', { name: 'x' }, alice);
    expect((await one.authenticate(key)).ok).toBe(true);
    const two = await createRuntime(resolveConfig({ storage: { type: 'memory' }, apiKeys: { secret: 'two-'.repeat(8) } }), { storage });
    expect(await two.authenticate(key)).toMatchObject({ ok: false, error: { message: 'invalid API key' } });
    await two.close();
    await one.close();
  });
});

describe('the key record cache (a store only this server uses)', () => {
  it('a lookup that read a key before its revocation does not cache it: the next call is refused', async () => {
    const storage = new LateReads();
    const runtime = await makeRuntime(storage, {});
    try {
      const { key, apiKey } = await call(runtime, 'keys.create', { name: 'late' }, alice);
      storage.armed = `apikey:${apiKey.id}`;
      const first = runtime.authenticate(key); // reads the record as it is now, answers later
      await vi.waitFor(() => expect(storage.release).toBeDefined());
      await call(runtime, 'keys.revoke', { id: apiKey.id }, alice);
      storage.release!();
      await first;
      const next = await runtime.authenticate(key);
      expect(next.ok).toBe(false);
    } finally {
      await runtime.close();
    }
  });
});
