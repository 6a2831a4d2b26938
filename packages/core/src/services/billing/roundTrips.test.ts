import pg from 'pg';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../kernel/Logger.js';
import type { Identity } from '../../kernel/identity.js';
import type { Storage } from '../../kernel/Storage.js';
import type { HoldRequest } from '../metering/Metering.js';
import { KeyVault } from '../vault/KeyVault.js';
import { alice, backends, VAULT_KEY, type OpenStore } from './__tests__/kit.js';
import { BillingService } from './BillingService.js';

/**
 * Store round trips of one metered call's ledger part (Metering.hold, then Hold.settle), counted
 * at the drivers: every query a pg Client sends (pg's Pool runs each of its queries on a Client)
 * and every command ioredis sends (an EVALSHA is one). Our modules are not mocked: the count
 * wraps the real drivers' methods. A warm call is two: the hold (the payer decision's read
 * folded into it) and the settle.
 *
 * Excluded, by warming up with three calls first: what a process learns once per user and
 * keeps (the rows a transaction plans on, PostgresStorage's and RedisStorage's TxValueCache;
 * Redis's script load). Those are per process, not per call, and a change by another instance is
 * caught by the transaction's own check (last test).
 */
const networked = backends.filter((b) => b.name === 'postgres' || b.name === 'redis');

const OPTIONS = {
  platformFeeRate: 0.1,
  allowAnonymousServerPaid: false,
  anonymousTokensPerWindow: 10_000,
  anonymousWindowMs: 3_600_000,
  reservationTtlMs: 900_000,
};

const request = (identity: Identity, requestId: string): HoldRequest => ({
  identity,
  requestId,
  provider: 'openai',
  estimatedTokens: 200,
  costUsd: 0.0001,
  byokAllowed: true,
  serverPays: true,
});

const usage = { tokensUsed: 120, provider: 'openai' as const, model: 'gpt-4.1-mini', costUsd: 0.00005 };

/** Counts the driver-level requests sent while `fn` runs. */
async function roundTrips<T>(fn: () => Promise<T>): Promise<{ count: number; result: T }> {
  const pgQuery = vi.spyOn(pg.Client.prototype, 'query');
  const redisSend = vi.spyOn(Redis.prototype, 'sendCommand');
  try {
    const result = await fn();
    return { count: pgQuery.mock.calls.length + redisSend.mock.calls.length, result };
  } finally {
    pgQuery.mockRestore();
    redisSend.mockRestore();
  }
}

// Without a reachable PostgreSQL or Redis the suite is reported skipped (an empty describe.each is an error).
describe.skipIf(networked.length > 0)('store round trips of a metered call', () => {
  it.skip('needs PostgreSQL or Redis (skipped: neither is reachable)', () => undefined);
});

describe.each(networked)('store round trips of a metered call, on $name', (backend) => {
  let store: OpenStore;
  let billing: BillingService;
  let n = 0;
  const billingOn = (storage: Storage) =>
    new BillingService(
      storage,
      new KeyVault(storage, { masterKey: VAULT_KEY }),
      OPTIONS,
      createLogger('error', () => undefined),
    );
  const call = async (b: BillingService = billing) => {
    const hold = await b.hold(request(alice, `rt-${++n}`));
    return { hold, charge: await hold.settle(usage) };
  };

  beforeEach(async () => {
    store = await backend.open('round-trips');
    billing = billingOn(store.storage);
    await billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
  });
  afterEach(async () => {
    await billing.stop();
    await store.cleanup();
  });

  it('a warm platform-paid call makes exactly two: the hold (with the payer decision) and the settle', async () => {
    for (let i = 0; i < 3; i++) await call();
    const hold = await roundTrips(() => billing.hold(request(alice, 'counted')));
    expect(hold.result.mode).toBe('platform');
    expect(hold.count).toBe(1);
    const settle = await roundTrips(() => hold.result.settle(usage));
    expect(settle.result).toMatchObject({ tokenUsage: { tokensUsed: 120, tokensCharged: 132 } });
    expect(settle.count).toBe(1);
    // Five calls in a row: ten round trips, and the ledger agrees with the balance.
    const five = await roundTrips(async () => {
      for (let i = 0; i < 5; i++) await call();
    });
    expect(five.count).toBe(10);
    expect((await billing.reconcile(alice.sub)).consistent).toBe(true);
    expect((await billing.balances(alice.sub)).subscription).toBe(1_000_000 - 9 * 132);
  });

  it('still two with stored preferences, a stored key (not first in the order) and one-time tokens drawn', async () => {
    const vault = new KeyVault(store.storage, { masterKey: VAULT_KEY });
    await vault.store(alice.sub, 'openai', 'sk-alice-own-key-0123456789');
    await billing.preferences.update(alice.sub, {
      byokEnabled: true,
      consumptionOrder: ['one_time', 'subscription', 'byok'],
      notifyOneTimeConsumed: true,
    });
    await billing.credit({ userId: alice.sub, tokens: 100_000, type: 'one_time', idempotencyKey: 'seed-1', source: 'test' });
    for (let i = 0; i < 3; i++) await call();
    const counted = await roundTrips(() => call());
    expect(counted.result.hold.mode).toBe('platform');
    expect(counted.count).toBe(2);
    expect((await billing.balances(alice.sub)).one_time).toBe(100_000 - 4 * 132);
  });

  it('a change another instance makes to the payer decision counts at the next call (the hold checks what it read)', async () => {
    for (let i = 0; i < 3; i++) await call();
    const other = billingOn(await store.another());
    // The user turns their own key first, on another instance: this instance's next call runs on it.
    await new KeyVault(other.ledger.storage, { masterKey: VAULT_KEY }).store(alice.sub, 'openai', 'sk-alice-own-key-0123456789');
    await other.preferences.update(alice.sub, { byokEnabled: true, consumptionOrder: ['byok', 'subscription', 'one_time'] });
    const byok = await call();
    expect(byok.hold.mode).toBe('byok');
    expect(byok.hold.apiKey).toBe('sk-alice-own-key-0123456789');
    expect(byok.charge).toMatchObject({ usageInfo: { tokensUsed: 120 } });
    // And back: the platform pays again, and the balance and the ledger agree.
    await other.preferences.update(alice.sub, { consumptionOrder: ['subscription', 'one_time', 'byok'] });
    expect((await call()).hold.mode).toBe('platform');
    expect((await billing.balances(alice.sub)).subscription).toBe(1_000_000 - 4 * 132);
    expect((await billing.reconcile(alice.sub)).consistent).toBe(true);
    await other.stop();
  });
});
