import { MemoryStorage } from '@ai-backend/core';
import { describe, expect, it, vi } from 'vitest';
import { SessionStore } from './sessionStore.js';

const KEY = 'a'.repeat(32);

describe('SessionStore', () => {
  it('stores records encrypted and reads them back', async () => {
    const storage = new MemoryStorage();
    const store = new SessionStore(storage, KEY);
    await store.put('session', 's1', { exp: Date.now() + 60_000, email: 'alice@example.com' });
    const raw = await storage.get<string>('oauth:session:s1');
    expect(raw).toMatch(/^v1\./);
    expect(raw).not.toContain('alice');
    expect(await store.get('session', 's1')).toMatchObject({ email: 'alice@example.com' });
  });

  it('treats a record sealed under another encryption key as absent', async () => {
    const storage = new MemoryStorage();
    await new SessionStore(storage, KEY).put('session', 's1', { exp: Date.now() + 60_000 });
    expect(await new SessionStore(storage, 'b'.repeat(32)).get('session', 's1')).toBeUndefined();
  });

  it('binds a record to its storage key (a copied record does not open)', async () => {
    const storage = new MemoryStorage();
    const store = new SessionStore(storage, KEY);
    await store.put('session', 'victim', { exp: Date.now() + 60_000, sub: 'admin' });
    await storage.set('oauth:session:attacker', await storage.get('oauth:session:victim'));
    expect(await store.get('session', 'attacker')).toBeUndefined();
  });

  it('refuses tampered ciphertext', async () => {
    const storage = new MemoryStorage();
    const store = new SessionStore(storage, KEY);
    await store.put('code', 'c', { exp: Date.now() + 60_000 });
    const raw = (await storage.get<string>('oauth:code:c'))!;
    const flipped = raw.slice(0, -2) + (raw.at(-2) === 'A' ? 'B' : 'A') + raw.at(-1);
    await storage.set('oauth:code:c', flipped);
    expect(await store.get('code', 'c')).toBeUndefined();
  });

  it('honours the expiry inside the record even if the backend keeps it', async () => {
    const store = new SessionStore(new MemoryStorage(), KEY);
    vi.useFakeTimers({ toFake: ['Date'] }); // the clock moves on; nothing waits
    try {
      await store.put('code', 'old', { exp: Date.now() + 5 });
      vi.setSystemTime(Date.now() + 15);
      expect(await store.get('code', 'old')).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('take returns a record once', async () => {
    const store = new SessionStore(new MemoryStorage(), KEY);
    await store.put('pending', 'p', { exp: Date.now() + 60_000 });
    const [a, b] = await Promise.all([store.take('pending', 'p'), store.take('pending', 'p')]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    expect(await store.take('pending', 'p')).toBeUndefined();
  });

  it('consume reports ok once, then reused; concurrent consumers get one ok', async () => {
    const store = new SessionStore(new MemoryStorage(), KEY);
    await store.put('refresh', 'r', { exp: Date.now() + 60_000, sid: 's' });
    const results = await Promise.all([store.consume('refresh', 'r'), store.consume('refresh', 'r'), store.consume('refresh', 'r')]);
    expect(results.filter((r) => r.status === 'ok')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'reused')).toHaveLength(2);
    expect(await store.consume('refresh', 'missing')).toEqual({ status: 'missing' });
  });
});
