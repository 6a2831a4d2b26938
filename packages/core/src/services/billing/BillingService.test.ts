import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, makeRuntime, type OpenStore } from './__tests__/kit.js';
import { platformFee, withFee } from './fee.js';
import type { Reservation } from './types.js';

describe('platform fee', () => {
  it('rounds up to whole tokens without floating-point drift', () => {
    expect(platformFee(100, 0.1)).toBe(10);
    expect(platformFee(1, 0.1)).toBe(1);
    expect(platformFee(95, 0.1)).toBe(10);
    expect(platformFee(0, 0.1)).toBe(0);
    expect(platformFee(1000, 0)).toBe(0);
    expect(withFee(1000, 0.25)).toBe(1250);
  });
});

describe.each(backends)('BillingService on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('billing');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  const credit = (userId: string, tokens: number, type: 'subscription' | 'one_time' = 'subscription', key = `k-${Math.random()}`) =>
    rt.billing.credit({ userId, tokens, type, idempotencyKey: key, source: 'test' });

  it('credits once per idempotency key; a replay changes nothing; a different amount is a conflict', async () => {
    const first = await credit(alice.sub, 1000, 'subscription', 'order-1');
    expect(first).toMatchObject({ applied: true, balance: 1000 });
    const replay = await credit(alice.sub, 1000, 'subscription', 'order-1');
    expect(replay).toMatchObject({ applied: false, entryId: first.entryId, balance: 1000 });
    await expect(credit(alice.sub, 999, 'subscription', 'order-1')).rejects.toMatchObject({ appCode: 'CONFLICT' });
    await expect(credit(alice.sub, 1000, 'one_time', 'order-1')).rejects.toMatchObject({ appCode: 'CONFLICT' });
    expect(await rt.billing.ledger.entries(alice.sub)).toHaveLength(1);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true, balances: { subscription: 1000, one_time: 0 } });
    // A replay after another credit: the first entry's id, the balance as it is now (docs/billing.md).
    await credit(alice.sub, 500, 'subscription', 'order-2');
    expect(await credit(alice.sub, 1000, 'subscription', 'order-1')).toMatchObject({
      applied: false,
      entryId: first.entryId,
      balance: 1500,
    });
    await expect(credit(alice.sub, 0)).rejects.toMatchObject({ appCode: 'INVALID_PARAMS' });
    await expect(credit(alice.sub, 1.5)).rejects.toMatchObject({ appCode: 'INVALID_PARAMS' });
  });

  it('a credit that would take the account past 2^53 - 1 tokens is refused, so no credit is "applied" without counting', async () => {
    const max = Number.MAX_SAFE_INTEGER;
    await credit(alice.sub, max - 10, 'subscription', 'big-1');
    // Past 2^53 a credit of 1 leaves the number as it was: refused with a clear error instead.
    await expect(credit(alice.sub, 11, 'one_time', 'big-2')).rejects.toMatchObject({
      appCode: 'BAD_REQUEST',
      details: { reason: 'balance_limit', limit: max },
    });
    expect(await credit(alice.sub, 10, 'one_time', 'big-3')).toMatchObject({ applied: true, balance: 10 });
    await expect(credit(alice.sub, 1, 'subscription', 'big-4')).rejects.toMatchObject({ appCode: 'BAD_REQUEST' });
    expect(await rt.billing.account(alice.sub)).toMatchObject({ subscription: max - 10, one_time: 10, purchased: max });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('reserve holds tokens plus fee; settle charges usage plus fee and refunds the rest; replays change nothing', async () => {
    await credit(alice.sub, 10_000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-1' });
    expect(r.tokens).toBe(1100);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(8900);
    expect(await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-1' })).toEqual(r);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(8900);

    const settled = await rt.billing.settle(r, { tokensUsed: 500, provider: 'openai', model: 'gpt-test', metadata: { name: 'n' } });
    expect(settled).toEqual({ tokensUsed: 500, tokensCharged: 550, platformFee: 50, remainingBalance: 9450 });
    expect(await rt.billing.settle(r, { tokensUsed: 900, provider: 'openai', model: 'gpt-test' })).toEqual(settled);
    await rt.billing.release(r, 'late release');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(9450);
    const kinds = (await rt.billing.ledger.entries(alice.sub)).map((e) => e.kind);
    expect(kinds).toEqual(['credit', 'reserve', 'settle']);
    // A finished call leaves no open hold behind, and replaying its reserve holds nothing.
    expect(await store.storage.keys('resv:')).toEqual([]);
    expect(await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-1' })).toEqual(r);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(9450);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('settle uses the stored reservation, not a tampered copy', async () => {
    await credit(alice.sub, 5000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'req-t' });
    const forged: Reservation = { ...r, tokens: 1_000_000, draws: [{ type: 'subscription', amount: 1_000_000 }] };
    const s = await rt.billing.settle(forged, { tokensUsed: 100, provider: 'openai', model: 'm' });
    expect(s.remainingBalance).toBe(5000 - 110);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('settle ignores changes made in place to the reservation object it returned', async () => {
    await credit(alice.sub, 5000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'req-t2' });
    r.tokens = 1_000_000;
    r.draws[0]!.amount = 1_000_000;
    const s = await rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' });
    expect(s.remainingBalance).toBe(5000 - 110);
    expect(await rt.billing.balances(alice.sub)).toMatchObject({ subscription: 5000 - 110 });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('release refunds the whole hold once', async () => {
    await credit(alice.sub, 2000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-2' });
    await rt.billing.release(r, 'upstream 500');
    await rt.billing.release(r, 'again');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(2000);
    await expect(rt.billing.settle(r, { tokensUsed: 1, provider: 'openai', model: 'm' })).rejects.toMatchObject({ appCode: 'CONFLICT' });
    const entries = await rt.billing.ledger.entries(alice.sub);
    expect(entries.map((e) => e.kind)).toEqual(['credit', 'reserve', 'release']);
    expect(entries[2]!.note).toEqual({ reason: 'upstream 500' });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('an overrun draws the difference as far as balances go and records what could not be collected', async () => {
    await credit(alice.sub, 1200);
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-3' });
    const s = await rt.billing.settle(r, { tokensUsed: 1200, provider: 'openai', model: 'm' });
    // usage 1200 + fee 120 = 1320; held 1100, 100 more available.
    expect(s).toEqual({ tokensUsed: 1200, tokensCharged: 1200, platformFee: 120, remainingBalance: 0 });
    const settle = (await rt.billing.ledger.entries(alice.sub)).at(-1)!;
    expect(settle.usage).toMatchObject({ uncollected: 120 });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true, balances: { subscription: 0 } });
  });

  it('an overrun within the balance is charged in full', async () => {
    await credit(alice.sub, 5000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'req-4' });
    const s = await rt.billing.settle(r, { tokensUsed: 200, provider: 'openai', model: 'm' });
    expect(s).toEqual({ tokensUsed: 200, tokensCharged: 220, platformFee: 20, remainingBalance: 4780 });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  it('refuses a reservation that the balances cannot cover, leaving them untouched', async () => {
    await credit(alice.sub, 500);
    await credit(alice.sub, 500, 'one_time');
    await expect(rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-5' })).rejects.toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
    });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 500, one_time: 500 });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
    // The same request id may be retried after a top-up.
    await credit(alice.sub, 500, 'one_time');
    expect((await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'req-5' })).tokens).toBe(1100);
  });

  it('draws balances in consumption order and gives refunds back to the last drawn first', async () => {
    await credit(alice.sub, 500, 'subscription');
    await credit(alice.sub, 1000, 'one_time');
    const r = await rt.billing.reserve({ identity: alice, tokens: 1000, requestId: 'o-1' });
    expect(r.draws).toEqual([
      { type: 'subscription', amount: 500 },
      { type: 'one_time', amount: 600 },
    ]);
    await rt.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 390, one_time: 1000 });

    await rt.billing.preferences.update(alice.sub, { consumptionOrder: ['one_time', 'subscription'] });
    const r2 = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'o-2' });
    expect(r2.draws).toEqual([{ type: 'one_time', amount: 110 }]);
    await rt.billing.settle(r2, { tokensUsed: 100, provider: 'openai', model: 'm' });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 390, one_time: 890 });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
  });

  describe('decide', () => {
    const decide = (estimatedTokens = 1000, over: Partial<Parameters<Runtime['billing']['decide']>[0]> = {}) =>
      rt.billing.decide({ identity: alice, provider: 'openai', estimatedTokens, apiKeyProvided: false, ...over });

    it('a request key means BYOK; no tokens and no key means payment required', async () => {
      expect(await decide(1000, { apiKeyProvided: true })).toEqual({ mode: 'byok' });
      await expect(decide()).rejects.toMatchObject({
        appCode: 'PAYMENT_REQUIRED',
        message: expect.stringMatching(/^insufficient platform tokens and no provider API key: get credit/),
      });
    });

    it('platform when the balances cover estimate plus fee', async () => {
      await credit(alice.sub, 1100);
      expect(await decide(1000)).toEqual({ mode: 'platform' });
      await expect(decide(1001)).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    });

    it('falls back to the stored key when enabled, and says so with an event', async () => {
      const events: unknown[] = [];
      rt.billing.events.on('fallbackToByok', (e) => events.push(e));
      await rt.vault.store(alice.sub, 'openai', 'sk-alice-openai-key-123456');
      await expect(decide()).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' }); // BYOK not enabled yet
      await rt.billing.preferences.update(alice.sub, { byokEnabled: true });
      expect(await decide()).toEqual({ mode: 'byok', apiKey: 'sk-alice-openai-key-123456' });
      expect(events).toEqual([{ userId: alice.sub, provider: 'openai', estimatedTokens: 1000, reason: 'balance' }]);
      // No key for google: still payment required.
      await expect(decide(1000, { provider: 'google' })).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
      // Provider switched off.
      await rt.billing.preferences.update(alice.sub, { byokProviders: { openai: { enabled: false } } });
      await expect(decide()).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
      // Without 'byok' in the order there is no fallback.
      await rt.billing.preferences.update(alice.sub, {
        byokProviders: { openai: { enabled: true } },
        consumptionOrder: ['subscription', 'one_time'],
      });
      await expect(decide()).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    });

    it("'byok' first in the order uses the key even with tokens available", async () => {
      await credit(alice.sub, 100_000);
      await rt.vault.store(alice.sub, 'openai', 'sk-alice-openai-key-123456');
      await rt.billing.preferences.update(alice.sub, { byokEnabled: true });
      expect(await decide()).toEqual({ mode: 'platform' });
      await rt.billing.preferences.update(alice.sub, { consumptionOrder: ['byok', 'subscription', 'one_time'] });
      expect(await decide()).toEqual({ mode: 'byok', apiKey: 'sk-alice-openai-key-123456' });
    });

    it("never hands one user's key to another", async () => {
      await rt.vault.store(alice.sub, 'openai', 'sk-alice-openai-key-123456');
      await rt.billing.preferences.update(bob.sub, { byokEnabled: true });
      await expect(decide(1000, { identity: bob })).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    });
  });

  it('anonymous callers: BYOK only, unless the operator allows server-paid use within a per-address window', async () => {
    await expect(
      rt.billing.decide({ identity: null, provider: 'openai', estimatedTokens: 10, apiKeyProvided: false }),
    ).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    expect(await rt.billing.decide({ identity: null, provider: 'openai', estimatedTokens: 10, apiKeyProvided: true })).toEqual({
      mode: 'byok',
    });
    await expect(rt.billing.reserve({ identity: null, tokens: 10, requestId: 'a-0', ip: '10.0.0.1' })).rejects.toMatchObject({
      appCode: 'PAYMENT_REQUIRED',
    });

    const anonRt = await makeRuntime(await store.another(), {
      billing: { platformFeeRate: 0.1, allowAnonymousServerPaid: true, anonymousTokensPerWindow: 1000 },
    });
    try {
      const b = anonRt.billing;
      expect(await b.decide({ identity: null, provider: 'openai', estimatedTokens: 500, apiKeyProvided: false, ip: '10.0.0.1' })).toEqual({
        mode: 'platform',
      });
      const r1 = await b.reserve({ identity: null, tokens: 500, requestId: 'a-1', ip: '10.0.0.1' }); // holds 550
      await expect(b.reserve({ identity: null, tokens: 500, requestId: 'a-2', ip: '10.0.0.1' })).rejects.toMatchObject({
        appCode: 'RATE_LIMITED',
      });
      // Another address has its own window.
      const other = await b.reserve({ identity: null, tokens: 500, requestId: 'a-3', ip: '10.0.0.2' });
      await b.release(other, 'test');
      expect(await b.settle(r1, { tokensUsed: 100, provider: 'openai', model: 'm' })).toEqual({
        tokensUsed: 100,
        tokensCharged: 110,
        platformFee: 10,
        remainingBalance: null,
      });
      // 110 of 1000 used: 500 + fee fits again.
      const r4 = await b.reserve({ identity: null, tokens: 500, requestId: 'a-4', ip: '10.0.0.1' });
      await b.release(r4, 'test');
      await b.release(r4, 'twice is a no-op');
      await expect(
        b.decide({ identity: null, provider: 'openai', estimatedTokens: 900, apiKeyProvided: false, ip: '10.0.0.1' }),
      ).rejects.toMatchObject({ appCode: 'PAYMENT_REQUIRED' });
    } finally {
      // Same storage object on memory: do not close it twice.
      if (backend.name === 'redis') await anonRt.close();
    }
  });

  it('fires tokenLow when a charge crosses the threshold, and oneTimeConsumed when one-time tokens run out', async () => {
    const low: unknown[] = [];
    const consumed: unknown[] = [];
    rt.billing.events.on('tokenLow', (e) => low.push(e));
    rt.billing.events.on('oneTimeConsumed', (e) => consumed.push(e));
    rt.billing.events.on('tokenLow', () => {
      throw new Error('a broken listener must not break billing');
    });
    await rt.billing.preferences.update(alice.sub, { notifyTokenLowThreshold: 1000 });
    await credit(alice.sub, 1500, 'one_time');
    const r1 = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'e-1' });
    await rt.billing.settle(r1, { tokensUsed: 100, provider: 'openai', model: 'm' }); // 1390 left
    expect(low).toEqual([]);
    const r2 = await rt.billing.reserve({ identity: alice, tokens: 400, requestId: 'e-2' });
    await rt.billing.settle(r2, { tokensUsed: 400, provider: 'openai', model: 'm' }); // 950 left
    expect(low).toEqual([{ userId: alice.sub, balance: 950, threshold: 1000 }]);
    const r3 = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'e-3' });
    await rt.billing.settle(r3, { tokensUsed: 100, provider: 'openai', model: 'm' }); // already below: no new event
    expect(low).toHaveLength(1);
    expect(consumed).toEqual([]);
    const r4 = await rt.billing.reserve({ identity: alice, tokens: 700, requestId: 'e-4' }); // 770 of 840
    await rt.billing.settle(r4, { tokensUsed: 763, provider: 'openai', model: 'm' }); // 763 + 77 = 840
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 0, one_time: 0 });
    expect(consumed).toEqual([{ userId: alice.sub }]);
  });

  it('records BYOK usage without touching balances', async () => {
    await credit(alice.sub, 100);
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'anthropic',
      model: 'claude-x',
      tokensUsed: 321,
      estimatedCostUsd: 0.0042,
      metadata: { name: 'doc' },
      requestId: 'b-1',
    });
    await rt.billing.recordByokUsage({ identity: null, provider: 'anthropic', model: 'claude-x', tokensUsed: 1, estimatedCostUsd: 0 });
    const last = (await rt.billing.ledger.entries(alice.sub)).at(-1)!;
    expect(last).toMatchObject({
      kind: 'byok_usage',
      lines: [],
      usage: { tokensUsed: 321, tokensCharged: 0, estimatedCostUsd: 0.0042, provider: 'anthropic' },
    });
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true, balances: { subscription: 100 } });
  });

  it('releases holds whose call never settled once they expire', async () => {
    await credit(alice.sub, 1000);
    await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'x-1' });
    expect(await rt.billing.sweepExpiredReservations()).toBe(0);
    expect(await rt.billing.sweepExpiredReservations(Date.now() + 16 * 60_000)).toBe(1);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
    expect((await rt.billing.ledger.entries(alice.sub)).at(-1)).toMatchObject({ kind: 'release', note: { reason: 'expired' } });
  });
  it('stop releases every hold this process still has open, and only those', async () => {
    await credit(alice.sub, 10_000);
    await credit(bob.sub, 10_000);
    const settled = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'stop-settled' });
    await rt.billing.settle(settled, { tokensUsed: 100, provider: 'openai', model: 'm' });
    await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'stop-open-a' });
    await rt.billing.reserve({ identity: bob, tokens: 300, requestId: 'stop-open-b' });
    expect(rt.billing.openHolds()).toBe(2);
    await rt.billing.stop();
    expect(rt.billing.openHolds()).toBe(0);
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 10_000 - withFee(100, 0.1), one_time: 0 });
    expect(await rt.billing.balances(bob.sub)).toEqual({ subscription: 10_000, one_time: 0 });
    const reasons = (await rt.billing.ledger.entries(bob.sub)).filter((e) => e.kind === 'release').map((e) => e.note?.reason);
    expect(reasons).toEqual(['server stopping']);
    expect(await store.storage.keys('hold:')).toEqual([]);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it('a settle still running when stop begins (a stream settles after its last byte) is charged, not released', async () => {
    await credit(alice.sub, 10_000);
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'stop-settling' });
    const settling = rt.billing.settle(r, { tokensUsed: 40, provider: 'openai', model: 'm' });
    await rt.billing.stop();
    await expect(settling).resolves.toMatchObject({ tokensCharged: 44 });
    expect(rt.billing.chargeFor(40)).toEqual({ tokensUsed: 40, tokensCharged: 44, platformFee: 4, remainingBalance: null });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 10_000 - 44, one_time: 0 });
    expect((await rt.billing.ledger.entries(alice.sub)).map((e) => e.kind)).toEqual(['credit', 'reserve', 'settle']);
  });

  it('a call cut by the shutdown releasing its hold after stop closed it is a no-op, even once the storage is closed', async () => {
    await credit(alice.sub, 10_000);
    const cut = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'stop-cut' });
    await rt.billing.stop();
    await rt.close();
    // The aborted call's own release runs later (its upstream request ends after the drain).
    await expect(rt.billing.release(cut, 'cancelled')).resolves.toBeUndefined();
  });

  it('histories page newest first with a cursor; analytics come from the day rows', async () => {
    await credit(alice.sub, 100_000);
    for (let i = 0; i < 5; i++) {
      const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: `page-${i}` });
      await rt.billing.settle(r, { tokensUsed: 10 + i, provider: 'openai', model: 'm' });
    }
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'anthropic',
      model: 'c',
      tokensUsed: 7,
      estimatedCostUsd: 0.5,
      requestId: 'byok-1',
    });
    await rt.billing.recordByokUsage({
      identity: alice,
      provider: 'anthropic',
      model: 'c',
      tokensUsed: 7,
      estimatedCostUsd: 0.5,
      requestId: 'byok-1',
    }); // replay
    const first = await rt.billing.usageHistory(alice.sub, { limit: 4 });
    expect(first.items.map((u) => u.requestId)).toEqual(['byok-1', 'page-4', 'page-3', 'page-2']);
    const second = await rt.billing.usageHistory(alice.sub, { limit: 4, cursor: first.nextCursor });
    expect(second.items.map((u) => u.requestId)).toEqual(['page-1', 'page-0']);
    expect(second.nextCursor).toBeUndefined();
    const consumption = await rt.billing.consumptionHistory(alice.sub, { limit: 2 });
    expect(consumption.items.map((c) => c.paidBy)).toEqual(['byok', { subscription: withFee(14, 0.1) }]);
    const a = await rt.billing.usageAnalytics(alice.sub, { days: 7, includeHistory: true, historyLimit: 3 });
    expect(a.totals).toMatchObject({ requests: 6, platformRequests: 5, byokRequests: 1, tokensUsed: 10 + 11 + 12 + 13 + 14 + 7 });
    expect(a.byProvider.anthropic).toMatchObject({ requests: 1, estimatedCostUsd: 0.5 });
    expect(a.byDay).toHaveLength(1);
    expect(a.history).toHaveLength(3);
    const account = await rt.billing.account(alice.sub);
    expect(account).toMatchObject({ purchased: 100_000, purchases: 1, used: 10 + 11 + 12 + 13 + 14 });
  });

  it('one metered call reads the preferences once; holds are read only inside their transactions', async () => {
    await credit(alice.sub, 10_000);
    const reads: string[] = [];
    // The same store, with its reads recorded (the runtime's storage is otherwise untouched).
    const counted = new Proxy(store.storage, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop === 'get') return (key: string) => (reads.push(key), target.get(key));
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const rt2 = await makeRuntime(counted);
    try {
      for (const outcome of ['settle', 'release'] as const) {
        reads.length = 0;
        const decision = await rt2.billing.decide({ identity: alice, provider: 'openai', estimatedTokens: 100, apiKeyProvided: false });
        expect(decision).toEqual({ mode: 'platform' });
        const r = await rt2.billing.reserve({ identity: alice, tokens: 100, requestId: `once-${outcome}`, decision });
        if (outcome === 'settle')
          expect(await rt2.billing.settle(r, { tokensUsed: 50, provider: 'openai', model: 'm' })).toMatchObject({ tokensUsed: 50 });
        else await rt2.billing.release(r, 'failed');
        expect(reads.filter((k) => k.startsWith('prefs:'))).toHaveLength(1);
        // Hold records are read only inside the reserve, settle and release transactions.
        expect(reads.filter((k) => k.startsWith('hold'))).toEqual([]);
      }
      // Without the decision (a library caller) the preferences are read as before, and the ledger still adds up.
      const r = await rt2.billing.reserve({ identity: alice, tokens: 100, requestId: 'no-decision' });
      await rt2.billing.settle(r, { tokensUsed: 100, provider: 'openai', model: 'm' });
      expect((await rt2.billing.ledger.audit(alice.sub)).consistent).toBe(true);
      expect((await rt2.billing.balances(alice.sub)).subscription).toBe(10_000 - withFee(50, 0.1) - withFee(100, 0.1));
    } finally {
      await rt2.close();
    }
  });
});
