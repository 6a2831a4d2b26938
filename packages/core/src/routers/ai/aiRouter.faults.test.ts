import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_IDS } from '../../config/sections/ai.js';
import { estimateTokens } from '../../services/ai/index.js';
import { waitFor, type UpstreamFault } from '@ai-backend/test-utils';
import {
  alice,
  createAiHarness,
  rejection,
  SERVER_KEY,
  SYSTEM_PROMPT,
  USER_KEY,
  visibleError,
  type AiHarness,
} from './__tests__/aiHarness.js';

// One harness for the file; every test starts from a fresh balance check. Its upstream timeout is
// generous, so a loaded machine never turns a fault the upstream answers into a timeout; the
// 'no answer' cases run on a second harness whose 400 ms timeout is what they wait for.
let h: AiHarness;
let hangs: AiHarness;
const START = 100_000;
beforeAll(async () => {
  [h, hangs] = await Promise.all([createAiHarness({ ai: { timeoutMs: 30_000 } }), createAiHarness({ ai: { timeoutMs: 400 } })]);
  await Promise.all([h.credit(alice.sub, START), hangs.credit(alice.sub, START)]);
});
afterAll(() => Promise.all([h.close(), hangs.close()]));
beforeEach(() => {
  h.upstream.reset();
  hangs.upstream.reset();
});

const code = (err: unknown) => (err as { code?: string }).code;

/** The reservation was released in full and the ledger still sums to the balance. */
async function expectRefunded(on: AiHarness = h): Promise<void> {
  expect(await on.balance(alice.sub)).toBe(START);
  expect((await on.runtime.billing.ledger.audit(alice.sub)).consistent).toBe(true);
}

/** Neither secret reaches the client or the logs, even though the test upstream quotes both. */
function expectNoSecrets(err: unknown, on: AiHarness = h): void {
  const seen = visibleError(err) + '\n' + on.logs.join('\n');
  expect(seen).not.toContain('TOP-SECRET');
  expect(seen).not.toContain(SERVER_KEY);
  expect(seen).not.toContain(USER_KEY);
}

/** An expectation that differs between the OpenAI-shaped error bodies (openai, openrouter: `code`) and the others (`type`, `status`). */
const byWire = (openAiShaped: string, others: string) => (provider: string) =>
  provider === 'openai' || provider === 'openrouter' ? openAiShaped : others;
const cases: Array<[string, UpstreamFault, string | ((provider: string) => string), string, number?]> = [
  ['401 from the server key', { kind: 'status', status: 401 }, 'BAD_GATEWAY', 'invalid_key', 401],
  ['403', { kind: 'status', status: 403 }, 'BAD_GATEWAY', 'invalid_key', 403],
  ['500', { kind: 'status', status: 500 }, 'BAD_GATEWAY', 'upstream_5xx', 500],
  ['503', { kind: 'status', status: 503 }, 'BAD_GATEWAY', 'upstream_5xx', 503],
  // A refusal of the request itself is the caller's error, with the status a provider would answer.
  ['400 quoting the prompt', { kind: 'status', status: 400 }, 'BAD_REQUEST', 'upstream_rejected', 400],
  ['422', { kind: 'status', status: 422 }, 'BAD_REQUEST', 'upstream_rejected', 422],
  ['413', { kind: 'status', status: 413 }, 'PAYLOAD_TOO_LARGE', 'upstream_rejected', 413],
  // OpenAI's code says the model is missing; Anthropic's and Google's 404 say the same for a path (ours).
  [
    '404 for a model the provider does not have',
    { kind: 'status', status: 404 },
    byWire('NOT_FOUND', 'BAD_GATEWAY'),
    'upstream_rejected',
    404,
  ],
  [
    '400 about the platform account',
    { kind: 'status', status: 400, code: 'billing_hard_limit_reached' },
    byWire('BAD_GATEWAY', 'BAD_REQUEST'),
    'upstream_rejected',
    400,
  ],
  // Not about the caller's request: the operator's base URL, the platform's own account.
  ['404 for a path', { kind: 'status', status: 404, code: 'unknown_url' }, 'BAD_GATEWAY', 'upstream_rejected', 404],
  ['402 (the platform account)', { kind: 'status', status: 402 }, 'BAD_GATEWAY', 'upstream_rejected', 402],
  ['malformed JSON', { kind: 'malformed' }, 'BAD_GATEWAY', 'malformed_response', 200],
  ['connection dropped mid-reply', { kind: 'drop' }, 'BAD_GATEWAY', 'connection_lost', 200],
  ['connection reset before any byte', { kind: 'reset' }, 'BAD_GATEWAY', 'unreachable'],
  ['no answer (timeout)', { kind: 'hang' }, 'GATEWAY_TIMEOUT', 'timeout'],
];

describe('ai.generateText upstream faults: clear errors, reservation refunded, no secrets', () => {
  for (const provider of PROVIDER_IDS) {
    for (const [name, fault, trpcCode, reason, status] of cases) {
      it(`${provider}: ${name}`, async () => {
        const on = fault.kind === 'hang' ? hangs : h;
        on.upstream.failNext(fault);
        const err = await rejection(on.caller(alice).ai.generateText({ content: 'hello', systemPrompt: SYSTEM_PROMPT, provider }));
        expect(code(err)).toBe(typeof trpcCode === 'function' ? trpcCode(provider) : trpcCode);
        expect(err.details).toMatchObject({ reason, provider, ...(status ? { status } : {}) });
        expect(err.cause).toBeUndefined();
        expect(on.upstream.requests).toHaveLength(1);
        await expectRefunded(on);
        expectNoSecrets(err, on);
      });
    }
  }

  it('429 becomes RATE_LIMITED with Retry-After', async () => {
    const err = await rejection(
      h.caller(alice).ai.generateText({ content: 'hi [[upstream:429:retry=7]]', systemPrompt: SYSTEM_PROMPT, provider: 'anthropic' }),
    );
    expect(err.appCode).toBe('RATE_LIMITED');
    expect(err.headers).toEqual({ 'Retry-After': '7' });
    expect(err.details).toMatchObject({ reason: 'rate_limited', retryAfterSeconds: 7 });
    await expectRefunded();
    expectNoSecrets(err);
  });

  it("a provider's 429 is logged as upstream_rate_limited, not as our own rate_limited", async () => {
    const before = h.logs.length;
    h.upstream.failNext({ kind: 'status', status: 429 });
    await rejection(h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai' }));
    const events = h.logs.slice(before).filter((l) => l.includes('security event'));
    expect(events).toHaveLength(1);
    expect(events[0]).toContain('"type":"upstream_rate_limited"');
    expect(events[0]).toContain('"provider":"openai"');
    expect(events[0]).not.toContain('"type":"rate_limited"');
  });

  it('429 without Retry-After still is RATE_LIMITED, without the header', async () => {
    h.upstream.failNext({ kind: 'status', status: 429 });
    const err = await rejection(h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'openai' }));
    expect(err.appCode).toBe('RATE_LIMITED');
    expect(err.headers).toBeUndefined();
  });

  it('an invalid BYOK key says the provider rejected the key, never echoing it', async () => {
    const badKey = 'invalid-' + USER_KEY;
    const err = await rejection(
      h.caller(alice).ai.generateText({ content: 'hi', systemPrompt: SYSTEM_PROMPT, provider: 'google', apiKey: badKey }),
    );
    expect(err.details).toMatchObject({ reason: 'invalid_key', status: 401 });
    expect(err.message).toBe('google rejected the API key');
    expect(visibleError(err) + h.logs.join('\n')).not.toContain(badKey);
    await expectRefunded();
  });

  it('a client disconnect aborts the upstream call and charges nothing', async () => {
    const ac = new AbortController();
    const call = rejection(
      h.caller(alice, ac.signal).ai.generateText({ content: 'wait [[upstream:hang]]', systemPrompt: SYSTEM_PROMPT, provider: 'openai' }),
    );
    await h.upstream.waitForRequests(1);
    // The hold is in place while the call runs.
    expect(await h.balance(alice.sub)).toBeLessThan(START);
    ac.abort();
    const err = await call;
    expect(code(err)).toBe('CLIENT_CLOSED_REQUEST');
    expect(err.details).toMatchObject({ reason: 'cancelled' });
    await expectRefunded();
    await expect.poll(() => h.upstream.requests[0]!.aborted).toBe(true);
  });

  it('a disconnect while the answer is on its way is not charged either', async () => {
    const ac = new AbortController();
    const call = rejection(
      h.caller(alice, ac.signal).ai.generateText({ content: 'slow [[upstream:latency=150]]', systemPrompt: 's', provider: 'anthropic' }),
    );
    await h.upstream.waitForRequests(1);
    ac.abort();
    expect(code(await call)).toBe('CLIENT_CLOSED_REQUEST');
    await expectRefunded();
  });

  it('an already-aborted request never reaches the upstream', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await rejection(h.caller(alice, ac.signal).ai.generateText({ content: 'x', systemPrompt: 's' }));
    expect(code(err)).toBe('CLIENT_CLOSED_REQUEST');
    expect(h.upstream.requests).toHaveLength(0);
    await expectRefunded();
  });

  it('a reply without usage numbers is charged the reserved worst case', async () => {
    const before = await h.balance(alice.sub);
    const r = await h
      .caller(alice)
      .ai.generateText({ content: 'abcd [[upstream:no-usage]]', systemPrompt: '', provider: 'openrouter', options: { maxTokens: 50 } });
    const worst = estimateTokens('abcd [[upstream:no-usage]]', '', 50);
    expect(r.tokenUsage?.tokensUsed).toBe(worst);
    expect(r.data.usage.totalTokens).toBeNull();
    expect(before - (await h.balance(alice.sub))).toBe(worst + Math.ceil(worst * 0.1));
    // Put the balance back for the other tests.
    await h.credit(alice.sub, worst + Math.ceil(worst * 0.1));
  });
});

describe('ai.getRegistryHealth after upstream failures', () => {
  it('a failing provider makes the registry degraded; its next success clears it', async () => {
    const r2 = await createAiHarness();
    try {
      await r2.credit(alice.sub, 10_000);
      expect((await r2.caller(null).ai.getRegistryHealth()).status).toBe('healthy');
      r2.upstream.failNext({ kind: 'status', status: 500 });
      await rejection(r2.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openrouter' }));
      const bad = await r2.caller(null).ai.getRegistryHealth();
      expect(bad.status).toBe('degraded');
      if (bad.status === 'unhealthy') throw new Error('unexpected');
      expect(bad.providers.openrouter).toMatchObject({ calls: 1, failures: 1, lastFailure: { reason: 'upstream_5xx' } });
      // The success must come strictly later than the failure (timestamps have millisecond resolution).
      const failedAt = Date.parse(bad.providers.openrouter.lastFailure!.at);
      await waitFor(() => Date.now() > failedAt, { intervalMs: 1 });
      await r2.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openrouter' });
      const good = await r2.caller(null).ai.getRegistryHealth();
      expect(good.status).toBe('healthy');
      if (good.status === 'unhealthy') throw new Error('unexpected');
      expect(good.providers.openrouter).toMatchObject({ calls: 2, failures: 1 });
      expect(good.providers.openrouter.avgLatencyMs).toBeTypeOf('number');
    } finally {
      await r2.close();
    }
  });
});

describe('ai.generateText retries (config ai.maxRetries)', () => {
  it('with maxRetries 1 a single 500 is retried and succeeds', async () => {
    const r2 = await createAiHarness({ ai: { maxRetries: 1 } });
    try {
      await r2.credit(alice.sub, 10_000);
      r2.upstream.failNext({ kind: 'status', status: 500, retryAfter: 0 });
      const r = await r2.caller(alice).ai.generateText({ content: 'x', systemPrompt: 's', provider: 'openai' });
      expect(r.success).toBe(true);
      expect(r2.upstream.requests).toHaveLength(2);
    } finally {
      await r2.close();
    }
  });
});
