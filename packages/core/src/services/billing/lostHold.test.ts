import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import { startPrivatePostgres, testService } from '@ai-backend/test-utils/services';
import type { TxPlan, TxRead } from '../../kernel/Storage.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import { alice, backends, call, makeRuntime, type OpenStore } from './__tests__/kit.js';
import { budgetKeys } from './Budgets.js';
import type { LedgerEntry } from './types.js';
import { ledgerKeys } from './Ledger.js';
import type { SpendRecord } from '../spend/periodSpend.js';
import { finishedKey, type FinishedRecord } from './Reservations.js';

/**
 * A reserve is not durable (on PostgreSQL it commits with synchronous_commit = off), so a crash
 * of the store can lose it, whole. The settle of that call then finds neither a hold nor a
 * finished record, and charges the whole call from the balances, as a late settle does: money
 * stays exact and the call is not free.
 */
const usage = { tokensUsed: 50, provider: 'openai', model: 'gpt-4.1-mini', costUsd: 0.0005 };
const seed = (rt: Runtime) =>
  rt.billing.credit({ userId: alice.sub, tokens: 1000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
const ledgerOf = async (rt: Runtime) => (await rt.storage.readLog<LedgerEntry>(ledgerKeys.log(alice.sub))).map((e) => e.record);

describe.each(backends)('a settle whose hold the store lost, on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  /** Where the lost reserves went: a store the crash took away (this store never saw them). */
  let lost: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('lost-hold');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
    lost = await makeRuntime(new MemoryStorage(), { billing: { platformFeeRate: 0.1 } });
    await seed(rt);
    await seed(lost);
  });
  afterEach(async () => {
    await lost.close();
    await rt.close();
    await store.cleanup();
  });

  it('charges the whole usage, takes nothing off the reserved budget figures, says so; replays return the first result', async () => {
    await rt.billing.budgets.set(alice.sub, 'daily', { tokens: 100_000, thresholds: [] }, 'admin');
    // Another call's hold stays open: its reserved figures must not move.
    await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'open-1', costUsd: 0.001 });
    const r = await lost.billing.reserve({ identity: alice, tokens: 100, requestId: 'lost-1', costUsd: 0.001 });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(890);

    const settled = await rt.billing.settle(r, usage);
    expect(settled).toEqual({ tokensUsed: 50, tokensCharged: 55, platformFee: 5, remainingBalance: 835 });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(835);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
    const ledger = await ledgerOf(rt);
    expect(ledger.map((e) => `${e.kind}:${e.requestId ?? ''}`)).toEqual(['credit:', 'reserve:open-1', 'settle:lost-1']);
    expect(ledger[2]).toMatchObject({
      lines: [{ type: 'subscription', delta: -55 }],
      note: { holdLost: true },
      usage: { tokensCharged: 55 },
    });
    expect(await rt.storage.get<FinishedRecord>(finishedKey(alice.sub, 'lost-1'))).toMatchObject({
      state: 'settled',
      lost: true,
      result: settled,
    });
    expect((await rt.storage.get<SpendRecord>(budgetKeys.spend(alice.sub)))?.daily).toMatchObject({
      tokens: 50,
      usdNanos: 500_000,
      reservedTokens: 100,
      reservedUsdNanos: 1_000_000,
    });

    expect(await rt.billing.settle(r, usage)).toEqual(settled);
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(835);
    expect(await ledgerOf(rt)).toHaveLength(3);
  });

  it("an API key's reserved figures are not taken off either; its spend counts the call", async () => {
    const { key, apiKey } = await call<{ key: string; apiKey: { id: string } }>(
      rt,
      'keys.create',
      { name: 'k', budget: { total: { tokens: 10_000 } } },
      alice,
    );
    const auth = await rt.authenticate(key);
    if (!auth.ok) throw auth.error;
    const open = await rt.billing.reserve({ identity: auth.identity, tokens: 100, requestId: 'open-k', costUsd: 0.001 });
    // What a reserve through the same key returned before the crash took its transaction away.
    const r = { ...open, requestId: 'lost-k' };
    expect(await rt.billing.settle(r, usage)).toMatchObject({ tokensCharged: 55, remainingBalance: 835 });
    const total = (await rt.keys.usage(apiKey.id)).periods.find((p) => p.period === 'total');
    expect(total).toMatchObject({ reserved: { tokens: 100 }, spent: { tokens: 50 } });
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it('a release of a lost hold changes nothing (nothing was held), and does not fail', async () => {
    const r = await lost.billing.reserve({ identity: alice, tokens: 100, requestId: 'lost-2' });
    await rt.billing.release(r, 'upstream failed');
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
    expect((await ledgerOf(rt)).map((e) => e.kind)).toEqual(['credit']);
  });

  it('a reservation older than the finished records live stays unknown: NOT_FOUND, nothing charged', async () => {
    const r = await lost.billing.reserve({ identity: alice, tokens: 100, requestId: 'lost-3' });
    const old = { ...r, createdAt: new Date(Date.now() - 8 * 24 * 3600_000).toISOString() };
    await expect(rt.billing.settle(old, usage)).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000);
  });
});

/** A store whose every transaction plan runs twice, as an optimistic store's does after a lost race. */
class PlanTwiceStorage extends MemoryStorage {
  override transact<R>(keys: readonly string[], plan: (read: TxRead) => TxPlan<R>): Promise<R> {
    return super.transact(keys, (read) => (plan(read), plan(read)));
  }
}

describe('the warning of a settle whose hold the store lost', () => {
  it('is logged once, for the run of the plan that committed', async () => {
    const logs: string[] = [];
    const rt = await makeRuntime(new PlanTwiceStorage(), { billing: { platformFeeRate: 0.1 } }, logs);
    const lost = await makeRuntime(new MemoryStorage(), { billing: { platformFeeRate: 0.1 } });
    try {
      await seed(rt);
      await seed(lost);
      const r = await lost.billing.reserve({ identity: alice, tokens: 100, requestId: 'lost-twice' });
      expect(await rt.billing.settle(r, usage)).toMatchObject({ tokensCharged: 55, remainingBalance: 945 });
      const warned = logs.filter((l) => l.includes('whose hold the store lost'));
      expect(warned).toHaveLength(1);
      expect(JSON.parse(warned[0]!)).toMatchObject({ level: 'warn', requestId: 'lost-twice', userId: alice.sub });
    } finally {
      await lost.close();
      await rt.close();
    }
  });
});

// Through the shared detection: under AI_BACKEND_REQUIRE_SERVICES=1 a missing binary fails the run.
const pgServer = await testService('postgres-server');

/**
 * The real thing: a private PostgreSQL cluster stopped in immediate mode (no shutdown checkpoint,
 * as a crash) right after a reserve was acknowledged. The WAL writer is slowed to 10 s, so the
 * reserve's commit record is still in PostgreSQL's memory when it dies: it is lost only because
 * it was committed with synchronous_commit = off (a durable commit flushes its WAL first).
 */
describe.skipIf(!pgServer.ok)('PostgreSQL crashes right after a reserve', () => {
  let server: Awaited<ReturnType<typeof startPrivatePostgres>>;
  let storage: PostgresStorage | undefined;
  let rt: Runtime | undefined;
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await storage?.close();
    await server?.close();
  });

  it('the hold is gone after recovery; the settle charges the whole call; balance == ledger', { timeout: 60_000 }, async () => {
    storage = await PostgresStorage.connect({
      host: server.host,
      port: server.port,
      user: server.user,
      database: server.database,
      schema: 'lost',
      connectTimeoutMs: 5000,
      queryTimeoutMs: 10_000,
    });
    // biome-ignore lint/complexity/useLiteralKeys: the store's private pool, reached on purpose by this test
    await storage['pool'].query("ALTER SYSTEM SET wal_writer_delay = '10s'");
    // biome-ignore lint/complexity/useLiteralKeys: as above
    await storage['pool'].query('SELECT pg_reload_conf()');
    rt = await makeRuntime(storage, { billing: { platformFeeRate: 0.1 } });
    await seed(rt); // durable: survives the crash
    await new Promise((r) => setTimeout(r, 500)); // the WAL writer's last short sleep ends; from now on it sleeps 10 s
    const r = await rt.billing.reserve({ identity: alice, tokens: 100, requestId: 'crash-1' });
    await server.stop();
    await server.start();
    // The pool's connections died with the server: wait until a fresh one answers.
    await waitFor(async () => (await storage!.health()).ok && (await storage!.get('probe')) === undefined, {
      timeoutMs: 20_000,
      what: 'PostgreSQL back',
    });

    expect((await rt.billing.balances(alice.sub)).subscription).toBe(1000); // the hold's draw was lost with it
    const settled = await rt.billing.settle(r, usage);
    expect(settled).toEqual({ tokensUsed: 50, tokensCharged: 55, platformFee: 5, remainingBalance: 945 });
    expect((await rt.billing.balances(alice.sub)).subscription).toBe(945);
    expect((await rt.billing.ledger.audit(alice.sub)).consistent).toBe(true);
    expect((await ledgerOf(rt)).map((e) => e.kind)).toEqual(['credit', 'settle']);
    expect(await rt.storage.get<FinishedRecord>(finishedKey(alice.sub, 'crash-1'))).toMatchObject({ state: 'settled', lost: true });
  });
});
