import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, waitFor, type TestUpstream } from '@ai-backend/test-utils';
import { startPrivateRedis, testService, type PrivateServer } from '@ai-backend/test-utils/services';
import { estimateTokens } from '../../services/ai/index.js';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { alice, createAiHarness, type AiHarness } from './__tests__/aiHarness.js';

/**
 * Issue 20: a call whose upstream answered is always settled. The store goes down while the
 * upstream works: the answer still reaches the client, the settle waits in the process and
 * lands when the store is back, and no hold is left open.
 */

const redisServer = await testService('redis-server');
const HOLD = estimateTokens('x', 's', 10);
const PER_CALL = HOLD + Math.ceil(HOLD * 0.1);
const countInputTokens = (system: string, text: string) => estimateTokens(text, system, 0);

let server: PrivateServer | undefined;
let h: AiHarness | undefined;
let upstream: TestUpstream | undefined;
afterEach(async () => {
  await h?.close();
  await upstream?.close();
  await server?.close();
  h = upstream = server = undefined;
});

describe.skipIf(!redisServer.ok)('settle during a storage outage', () => {
  it('answered calls are charged once the store is back; the client got its answer; no hold stays open', { timeout: 60_000 }, async () => {
    server = await startPrivateRedis();
    upstream = await createTestUpstream({ latencyMs: 400, outputTokens: 10, countInputTokens });
    h = await createAiHarness(
      {},
      {},
      { upstream, storage: await RedisStorage.connect({ host: server.host, port: server.port, keyPrefix: 'outage:' }) },
    );
    const credited = 100 * PER_CALL;
    await h.credit(alice.sub, credited);

    const calls = Array.from({ length: 10 }, () =>
      h!.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } }),
    );
    // Every call holds its tokens, then the store dies while the upstream is still working.
    await waitFor(() => upstream!.requests.length === 10, { timeoutMs: 5_000, what: 'ten upstream requests' });
    await server.stop();
    const results = await Promise.all(calls);
    for (const r of results) {
      expect(r.success).toBe(true);
      expect(r.tokenUsage).toMatchObject({ tokensCharged: PER_CALL, remainingBalance: null });
    }
    expect(h.runtime.billing.pendingCloses()).toBe(10);
    // While the store is down the sweeper must not release them (that would make them free).
    await h.runtime.billing.sweepExpiredReservations(Date.now() + 3_600_000).catch(() => 0);

    await server.start();
    await waitFor(() => h!.runtime.billing.pendingCloses() === 0, { timeoutMs: 20_000, what: 'the queued settles to land' });
    expect(await h.balance(alice.sub)).toBe(credited - 10 * PER_CALL);
    expect(h.runtime.billing.openHolds()).toBe(0);
    expect(await h.runtime.storage.dueKeys('hold:', Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
    const history = (await h.caller(alice).billing.getUsageHistory({ limit: 50 })) as { usage: unknown[] };
    expect(history.usage).toHaveLength(10);
  });

  it('a failed call whose release hits the outage is released once the store is back', { timeout: 60_000 }, async () => {
    server = await startPrivateRedis();
    upstream = await createTestUpstream({ latencyMs: 300, outputTokens: 10, countInputTokens });
    h = await createAiHarness(
      { ai: { maxRetries: 0 } },
      {},
      { upstream, storage: await RedisStorage.connect({ host: server.host, port: server.port, keyPrefix: 'outage2:' }) },
    );
    const hold = estimateTokens('x [[upstream:500]]', 's', 10);
    await h.credit(alice.sub, 10 * hold);
    const call = h
      .caller(alice)
      .ai.generateText({ content: 'x [[upstream:500]]', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } });
    await waitFor(() => upstream!.requests.length === 1, { timeoutMs: 5_000, what: 'the upstream request' });
    await server.stop();
    await expect(call).rejects.toBeTruthy();
    expect(h.runtime.billing.pendingCloses()).toBe(1);
    await server.start();
    await waitFor(() => h!.runtime.billing.pendingCloses() === 0, { timeoutMs: 20_000, what: 'the queued release to land' });
    expect(await h.balance(alice.sub)).toBe(10 * hold);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});
