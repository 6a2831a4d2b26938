import { afterEach, describe, expect, it } from 'vitest';
import { createTestUpstream, waitFor, type TestUpstream } from '@ai-backend/test-utils';
import { coreErrorOf } from '../../kernel/CoreError.js';
import type { StreamEvent } from '../../services/ai/runStreamText.js';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { estimateTokens } from '../../services/ai/index.js';
import { dropTestKeys, testRedis, testRedisOptions } from '@ai-backend/test-utils/services';
import { alice, createAiHarness, type AiHarness } from './__tests__/aiHarness.js';

const redis = await testRedis();

// Each stream: content "x" + system "s" + maxTokens 10 holds the true upper bound
// estimateTokens('x', 's', 10); the upstream reports exactly that usage, so each completed stream
// costs the hold plus the 10% fee (rounded up) and a balance of 10 such calls pays for exactly 10.
const HOLD = estimateTokens('x', 's', 10);
const PER_CALL = HOLD + Math.ceil(HOLD * 0.1);
const countInputTokens = (system: string, text: string) => estimateTokens(text, system, 0);
const AFFORDABLE = 10;
const CALLS = 60;

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

async function drain(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

async function streams(instances: AiHarness[]) {
  const results = await Promise.allSettled(
    Array.from({ length: CALLS }, async (_, i) =>
      drain(
        await instances[i % instances.length]!.caller(alice).ai.streamText({
          content: 'x',
          systemPrompt: 's',
          provider: (['anthropic', 'openai', 'google', 'openrouter'] as const)[i % 4],
          options: { maxTokens: 10 },
        }),
      ),
    ),
  );
  const ok = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<StreamEvent[]>).value);
  const refused = results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'PAYMENT_REQUIRED').length;
  const other = results
    .filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code !== 'PAYMENT_REQUIRED')
    .map((r) => (r as PromiseRejectedResult).reason);
  return { ok, refused, other };
}

describe(`ai.streamText: ${CALLS} concurrent streams against a balance for ${AFFORDABLE}`, () => {
  it('memory storage: exactly the affordable number stream, each charged in full, balance ends at 0', async () => {
    upstream = await createTestUpstream({ latencyMs: 20, outputTokens: 10, chunkDelayMs: 2, countInputTokens });
    const h = await createAiHarness({}, {}, { upstream });
    harnesses.push(h);
    await h.credit(alice.sub, AFFORDABLE * PER_CALL);
    const r = await streams([h]);
    expect(r.other).toEqual([]);
    expect(r.ok).toHaveLength(AFFORDABLE);
    expect(r.refused).toBe(CALLS - AFFORDABLE);
    for (const events of r.ok) {
      const finish = events.at(-1)!;
      expect(finish.type === 'finish' && finish.result.tokenUsage).toMatchObject({ tokensUsed: HOLD, tokensCharged: PER_CALL });
    }
    expect(upstream.requests).toHaveLength(AFFORDABLE);
    expect(await h.balance(alice.sub)).toBe(0);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });

  it.skipIf(!redis.ok)('two instances sharing Redis: still exactly the affordable number', async () => {
    const opts = testRedisOptions(redis, 'ai-stream-concurrency');
    prefix = opts.keyPrefix;
    upstream = await createTestUpstream({ latencyMs: 20, outputTokens: 10, chunkDelayMs: 2, countInputTokens });
    const a = await createAiHarness({}, {}, { upstream, storage: await RedisStorage.connect(opts) });
    const b = await createAiHarness({}, {}, { upstream, storage: await RedisStorage.connect(opts) });
    harnesses.push(a, b);
    await a.credit(alice.sub, AFFORDABLE * PER_CALL);
    const r = await streams([a, b]);
    expect(r.other).toEqual([]);
    expect(r.ok).toHaveLength(AFFORDABLE);
    expect(await b.balance(alice.sub)).toBe(0);
    expect((await a.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});

describe('ai.streamText: streams cancelled at random points', () => {
  it('each is settled once for what it produced (never more than held, never zero), the rest released, ledger clean', async () => {
    upstream = await createTestUpstream({
      chunkDelayMs: 5,
      reply: () => 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu',
    });
    const h = await createAiHarness({}, {}, { upstream });
    harnesses.push(h);
    const START = 100_000;
    await h.credit(alice.sub, START);
    const N = 30;
    const content = 'Please list the Greek letters';
    const maxTokens = 64;
    // Completed streams are charged the provider's usage (the test upstream counts 4 characters per
    // token); cut ones our upper bound of the input plus the UTF-8 bytes that arrived, capped at the hold.
    const reported = Math.ceil(content.length / 4);
    const input = estimateTokens(content, '', 0);
    // Deterministic "random" stopping points: after 0..9 text events (some streams finish).
    const stops = Array.from({ length: N }, (_, i) => (i * 7) % 13);
    const outcomes = await Promise.all(
      stops.map(async (stop, i) => {
        const controller = new AbortController();
        const stream = await h.caller(alice, controller.signal).ai.streamText({
          content,
          systemPrompt: '',
          provider: (['anthropic', 'openai', 'google', 'openrouter'] as const)[i % 4],
          options: { maxTokens },
        });
        let seen = 0;
        let text = '';
        let requestId = '';
        let completed = false;
        try {
          for await (const e of stream) {
            if (e.type === 'start') requestId = e.requestId;
            if (e.type === 'text') {
              text += e.delta;
              if (++seen > stop) {
                // Half the streams are cancelled by the client signal, half by stopping to read.
                if (i % 2) controller.abort();
                else break;
              }
            }
            if (e.type === 'finish') completed = true;
          }
        } catch (err) {
          // Thrown while iterating, after the procedure returned: the CoreError itself.
          expect(coreErrorOf(err)?.appCode).toBe('CANCELLED');
        }
        return { requestId, text, completed };
      }),
    );
    // A stream the client left settles off the request path: wait until every one has.
    const entries = await waitFor(
      async () => {
        const all = await h.runtime.billing.ledger.entries(alice.sub);
        return outcomes.every((o) => all.some((e) => e.requestId === o.requestId && e.kind === 'settle')) && all;
      },
      { what: 'a settle entry for every stream' },
    );
    let charged = 0;
    for (const o of outcomes) {
      const settles = entries.filter((e) => e.requestId === o.requestId && e.kind === 'settle');
      expect(settles).toHaveLength(1);
      const used = settles[0]!.usage!.tokensUsed;
      if (o.completed) expect(used).toBe(reported + 16);
      else {
        // Input + UTF-8 bytes of what arrived, capped at the hold.
        expect(used).toBeGreaterThanOrEqual(Math.min(input + maxTokens, input + Buffer.byteLength(o.text)));
        expect(used).toBeLessThanOrEqual(input + maxTokens);
      }
      charged += settles[0]!.usage!.tokensCharged;
    }
    expect(outcomes.some((o) => !o.completed)).toBe(true);
    expect(await h.balance(alice.sub)).toBe(START - charged);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});

describe('ai.streamText: a client that leaves before the upstream request went out', () => {
  it('pays nothing: the hold is released and no request reaches the upstream', async () => {
    upstream = await createTestUpstream();
    const h = await createAiHarness({}, {}, { upstream });
    harnesses.push(h);
    await h.credit(alice.sub, 10_000);
    for (const provider of ['openai', 'anthropic'] as const) {
      const controller = new AbortController();
      const stream = await h
        .caller(alice, controller.signal)
        .ai.streamText({ content: 'x', systemPrompt: '', provider, options: { maxTokens: 10 } });
      // The stream starts (the SDK, the target and the provider are readied), and the client leaves
      // before any of that is done: the attempt's request is never sent.
      const first = stream[Symbol.asyncIterator]().next();
      controller.abort();
      expect(coreErrorOf(await first.catch((e: unknown) => e))?.appCode).toBe('CANCELLED');
    }
    const entries = await waitFor(
      async () => {
        const all = await h.runtime.billing.ledger.entries(alice.sub);
        return all.filter((e) => e.kind === 'release').length === 2 && all;
      },
      { what: 'both holds released' },
    );
    expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(0);
    expect(upstream.requests).toHaveLength(0);
    expect(await h.balance(alice.sub)).toBe(10_000);
    expect((await h.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
  });
});

describe('ai.streamText: a tool call the client left after', () => {
  it('counts its streamed arguments once (the tool-call event adds only its id and name)', async () => {
    upstream = await createTestUpstream();
    const h = await createAiHarness({}, {}, { upstream });
    harnesses.push(h);
    await h.credit(alice.sub, 100_000);
    const tools = [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    /** The tokens used by a stream left at the first event of `type`, and the tool call it saw. */
    const leaveAt = async (type: 'start' | 'tool-call') => {
      const stream = await h
        .caller(alice)
        .ai.streamText({ content: 'weather?', systemPrompt: '', provider: 'openrouter', tools, options: { maxTokens: 200 } });
      let requestId = '';
      let call: { toolCallId: string; toolName: string } | undefined;
      for await (const e of stream) {
        if (e.type === 'start') requestId = e.requestId;
        if (e.type === 'tool-call') call = { toolCallId: e.toolCallId, toolName: e.toolName };
        if (e.type === type) break;
      }
      const settle = await waitFor(
        async () => (await h.runtime.billing.ledger.entries(alice.sub)).find((e) => e.requestId === requestId && e.kind === 'settle'),
        { what: `the settle of the stream left at ${type}` },
      );
      return { used: settle.usage!.tokensUsed, call };
    };
    // `start` goes out with the first output, the finished call: its arguments came as deltas before it.
    const atStart = await leaveAt('start');
    const atCall = await leaveAt('tool-call');
    expect(atStart.call).toBeUndefined();
    expect(atCall.used - atStart.used).toBe(Buffer.byteLength(JSON.stringify(atCall.call)));
  });
});
