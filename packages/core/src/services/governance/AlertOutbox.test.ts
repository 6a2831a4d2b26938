import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { AlertOutbox } from './AlertOutbox.js';

const SECRET = 'outbox-unit-secret-0123456789abcdefghij';

/** An outbox whose receiver refuses every connection (port 9 on loopback: nothing listens). */
function outbox(storage = new MemoryStorage()) {
  const config = resolveConfig({
    storage: { type: 'memory' },
    alerts: { webhooks: [{ url: 'http://127.0.0.1:9/hook/TOKEN-IN-PATH?k=SECRET-QUERY', secret: SECRET }], maxAttempts: 1, timeoutMs: 500 },
  });
  return { storage, alerts: new AlertOutbox(storage, config, createLogger('silent')) };
}

describe('AlertOutbox deliveries and retry', () => {
  it('lists dead letters with the receiver as its origin only, and no body', async () => {
    const { alerts } = outbox();
    const id = await alerts.enqueue('tokenLow', { userId: 'u1', secretish: 'BODY-FIELD' });
    await alerts.scan();
    const { pending, dead } = await alerts.deliveries(10);
    expect(pending).toEqual([]);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      deliveryId: `${id}:0`,
      eventId: id,
      event: 'tokenLow',
      state: 'dead',
      receiver: 'http://127.0.0.1:9',
      attempts: 1,
      nextAt: null,
    });
    expect(JSON.stringify(dead)).not.toMatch(/TOKEN-IN-PATH|SECRET-QUERY|BODY-FIELD/);
  });

  it('a retry puts the dead letter back once, with its attempts reset, even when two retries race', async () => {
    const { alerts, storage } = outbox();
    const id = await alerts.enqueue('tokenLow', { userId: 'u2' });
    await alerts.scan();
    const results = await Promise.all([alerts.retry(`${id}:0`), alerts.retry(`${id}:0`)]);
    expect(results.filter((r) => r.retried && r.state === 'requeued')).toHaveLength(1);
    // Requeued: in the outbox (the racing second retry may only have made it due now), not dead.
    expect(await storage.keys('alerts:dead:')).toEqual([]);
    const [key] = await storage.keys('alerts:outbox:');
    expect(key).toBe(`alerts:outbox:${id}:0`);
    expect(await storage.get<{ attempts: number }>(key!)).toMatchObject({ attempts: 0 });
  });

  it('an unknown or malformed id is not retried', async () => {
    const { alerts } = outbox();
    expect(await alerts.retry('00000000-0000-0000-0000-000000000000:0')).toEqual({ retried: false, state: 'unknown' });
    expect(await alerts.retry('../../x')).toEqual({ retried: false, state: 'unknown' });
  });

  it('scans read the due index, not a listing of the outbox: one listing per instance (records of older releases), then none', async () => {
    const storage = new MemoryStorage();
    // A record an older release wrote without a due time, and one written now: both delivered (and dead).
    await storage.set('alerts:outbox:legacy-id:0', {
      id: 'legacy-id',
      event: 'tokenLow',
      url: 'http://127.0.0.1:9/hook',
      receiver: 0,
      body: '{}',
      attempts: 0,
      nextAt: 0,
      leaseUntil: 0,
    });
    const { alerts } = outbox(storage);
    const prefixes: string[] = [];
    const keys = storage.keys.bind(storage);
    storage.keys = async (prefix: string) => (prefixes.push(prefix), keys(prefix));
    await alerts.enqueue('tokenLow', { userId: 'u3' });
    await alerts.scan();
    expect((await alerts.pending()).dead).toBe(2);
    prefixes.length = 0;
    for (let i = 0; i < 20; i++) await alerts.enqueue('tokenLow', { userId: `u-${i}` });
    await alerts.scan();
    await alerts.scan();
    // A record that dies counts the dead-letter list (its bound); the outbox itself is never listed.
    expect(prefixes.filter((p) => p !== 'alerts:dead:')).toEqual([]);
    expect((await alerts.pending()).dead).toBe(22);
  });

  it('keeps at most alerts.maxDeadLetters dead letters: the oldest are dropped and counted', async () => {
    const storage = new MemoryStorage();
    const config = resolveConfig({
      storage: { type: 'memory' },
      alerts: { webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: SECRET }], maxAttempts: 1, timeoutMs: 500, maxDeadLetters: 3 },
    });
    const alerts = new AlertOutbox(storage, config, createLogger('silent'));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await alerts.enqueue('tokenLow', { userId: `u-${i}` }))!);
      await alerts.scan();
      // Distinct death times, so "oldest" is well defined.
      const t = Date.now();
      while (Date.now() === t);
    }
    expect(await alerts.pending()).toEqual({ outbox: 0, dead: 3, deadDropped: 2 });
    const kept = (await alerts.deliveries(10)).dead.map((d) => d.eventId).sort();
    expect(kept).toEqual(ids.slice(2).sort());
  });
});
