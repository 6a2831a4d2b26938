import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, type TestUpstream } from '@ai-backend/test-utils';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { estimateTokens } from '../../services/ai/index.js';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';

const redis = await testRedis();
import { alice, createAiHarness, type AiHarness } from './__tests__/aiHarness.js';

// Each call: content "x" + system "s" + maxTokens 10 holds the true upper bound
// estimateTokens('x', 's', 10) (UTF-8 bytes plus message overhead plus maxTokens). The upstream
// reports exactly that usage, so each success costs the hold plus the 10% fee (rounded up) and a
// balance of 50 such calls pays for exactly 50 of them.
const HOLD = estimateTokens('x', 's', 10);
const PER_CALL = HOLD + Math.ceil(HOLD * 0.1);
const countInputTokens = (system: string, text: string) => estimateTokens(text, system, 0);
const AFFORDABLE = 50;
const CALLS = 200;

const harnesses: AiHarness[] = [];
let upstream: TestUpstream | undefined;
let prefix: string | undefined;
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  await upstream?.close();
  upstream = undefined;
  if (prefix) await dropTestKeys(redis, prefix);
  prefix = undefined;
});

async function hammer(instances: AiHarness[]): Promise<{ ok: number; refused: number; other: unknown[] }> {
  const results = await Promise.allSettled(
    Array.from({ length: CALLS }, (_, i) =>
      instances[i % instances.length]!.caller(alice).ai.generateText({
        content: 'x',
        systemPrompt: 's',
        provider: 'openai',
        options: { maxTokens: 10 },
      }),
    ),
  );
  const refused = results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'PAYMENT_REQUIRED').length;
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  const other = results
    .filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code !== 'PAYMENT_REQUIRED')
    .map((r) => (r as PromiseRejectedResult).reason);
  return { ok, refused, other };
}

describe(`ai.generateText: ${CALLS} concurrent calls against a balance for ${AFFORDABLE}`, () => {
  it('memory storage: exactly the affordable number succeed, balance ends at 0, ledger sums to it', async () => {
    upstream = await createTestUpstream({ latencyMs: 20, outputTokens: 10, countInputTokens });
    const h = await createAiHarness({}, {}, { upstream });
    harnesses.push(h);
    await h.credit(alice.sub, AFFORDABLE * PER_CALL);
    const r = await hammer([h]);
    expect(r.other).toEqual([]);
    expect(r.ok).toBe(AFFORDABLE);
    expect(r.refused).toBe(CALLS - AFFORDABLE);
    expect(upstream.requests).toHaveLength(AFFORDABLE);
    expect(await h.balance(alice.sub)).toBe(0);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it.skipIf(!redis.ok)('two server instances sharing Redis never spend the same tokens twice', async () => {
    const opts = testRedisOptions(redis, 'ai-concurrency');
    prefix = opts.keyPrefix;
    upstream = await createTestUpstream({ latencyMs: 20, outputTokens: 10, countInputTokens });
    const a = await createAiHarness({}, {}, { upstream, storage: await RedisStorage.connect(opts) });
    const b = await createAiHarness({}, {}, { upstream, storage: await RedisStorage.connect(opts) });
    harnesses.push(a, b);
    await a.credit(alice.sub, AFFORDABLE * PER_CALL);
    const r = await hammer([a, b]);
    expect(r.other).toEqual([]);
    expect(r.ok).toBe(AFFORDABLE);
    expect(upstream.requests).toHaveLength(AFFORDABLE);
    expect(await b.balance(alice.sub)).toBe(0);
    expect((await a.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});
