import { createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamFault } from '@ai-backend/test-utils';
import { createTestUpstream, creditTokens, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { describeV1Paths, type V1Path } from './helpers/describeMatrix.js';
import { callV1, V1_FORMATS, v1Clients, type V1Format } from './helpers/v1Call.js';
import { fee, OUTPUT_TOKENS, settlementOf, usageOf } from './helpers/settlementOf.js';

/**
 * A fallback after an upstream error, for the three /v1 wire formats, plain and streamed, on both
 * paths: the first target answers 500, 503 or 429, resets the connection before any byte, never
 * answers, answers a 200 that is not JSON (or, streamed, plain JSON instead of events), cuts a
 * plain answer mid-body or stalls a stream before its first output; or its provider refuses
 * connections. The caller gets the fallback's answer, the
 * upstream saw the two requests, and the call is charged once, for the target that answered (its
 * provider and model in the ledger). The fallbacks (`ai.fallbacks`): the same provider's other
 * model first (passed through again on the fast path), then another provider (the SDK path for
 * any format but its own).
 */
const FALLBACKS = ['openai/gpt-4.1', 'anthropic/claude-haiku-4-5'];
/** [first target, the target that serves after one failure] per format. */
const SERVED: Record<V1Format, [string, string]> = {
  chat: ['openai/gpt-4.1-mini', 'openai/gpt-4.1'],
  responses: ['openai/gpt-4.1-mini', 'openai/gpt-4.1'],
  messages: ['anthropic/claude-sonnet-4-5', 'openai/gpt-4.1'],
};
const START = 100_000;

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;

const serverConfig = (extra: object = {}) => ({
  storage: { type: 'memory' as const },
  // A short idle timeout so a stalled stream falls back within the test's time.
  ai: {
    fallbacks: FALLBACKS,
    timeoutMs: 800,
    retry: { backoffMs: 5, maxBackoffMs: 20 },
    circuitBreaker: { failureThreshold: 1000 },
    ...extra,
  },
});

describeV1Paths('ai-pass-through-fallbacks', (path: V1Path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: OUTPUT_TOKENS });
    gw = await startAiServer(upstream, serverConfig(), { path });
    admin = await tokenFor('ptf-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  async function caller(server: AiServer) {
    const sub = `ptf-${path}-${++users}`;
    await creditTokens(server.url, admin, sub, START, `ptf-${sub}`);
    return { sub, clients: v1Clients(server.url, await tokenFor(sub)) };
  }

  /**
   * The caller got `served`'s answer, the upstream saw `first` fail and then it, one settle for it,
   * the balance exact. A reset may instead be retried on `first` by the HTTP client (a request
   * whose pooled connection closed before any answer is sent again once): then `first` serves,
   * still charged once.
   */
  async function servedBy(server: AiServer, format: V1Format, stream: boolean, first: string, fallback: string, fault?: UpstreamFault) {
    const u = await caller(server);
    const content = `fall back ${format} ${stream ? 'streamed' : 'plain'}`;
    upstream.reset();
    if (fault) upstream.failNext(fault);
    const seen = await callV1(u.clients, format, { content, stream });
    expect(seen.status).toBe(200);
    expect(seen.failed).toBe(false);
    const last = upstream.requests.filter((r) => r.format !== 'models').at(-1)!;
    const served = fault?.kind === 'reset' && `${last.provider}/${last.model}` === first ? first : fallback;
    const [provider, model] = [served.split('/')[0]!, served.split('/').slice(1).join('/')];
    // The test upstream's reply names the wire format and model it answered in.
    expect(seen.text).toMatch(new RegExp(`^Test reply from [a-z-]+ \\(${model.replace(/\./g, '\\.')}\\)`));
    if (seen.path === 'pass-through') expect(seen.model).toBe(served);
    const calls = upstream.requests.filter((r) => r.format !== 'models');
    expect(calls.at(-1)).toMatchObject({ provider, model });
    if (fault) expect(calls.map((r) => `${r.provider}/${r.model}`)).toEqual([first, served]);
    const s = await settlementOf(server, u.sub);
    expect(s.closes).toBe(1);
    const used = usageOf(content);
    expect(s.usage).toMatchObject({ provider, model, tokensUsed: used, tokensCharged: used + fee(used) });
    const b = await server.runtime.billing.balances(u.sub);
    expect(b.subscription + b.one_time).toBe(START - used - fee(used));
  }

  const FAULTS: Array<[string, UpstreamFault, 'both' | 'plain' | 'streamed']> = [
    ['500', { kind: 'status', status: 500 }, 'both'],
    ['503', { kind: 'status', status: 503 }, 'both'],
    ['429', { kind: 'status', status: 429, retryAfter: 1 }, 'both'],
    ['a connection reset before any byte', { kind: 'reset' }, 'both'],
    ['no answer within ai.timeoutMs', { kind: 'hang' }, 'both'],
    ['a 200 that is not JSON', { kind: 'malformed' }, 'both'],
    ['a plain answer cut mid-body', { kind: 'drop' }, 'plain'],
    ['plain JSON instead of an event stream', { kind: 'json' }, 'streamed'],
    // Its first event (Chat's role chunk, `message_start`, `response.created`) carries no output yet.
    ['a stream that stalls after its first event, before any output', { kind: 'stall' }, 'streamed'],
  ];

  describe('the first target fails before any byte reached the caller: the fallback answers, charged once', () => {
    for (const format of V1_FORMATS)
      for (const [name, fault, when] of FAULTS)
        it(`${format}: ${name}`, async () => {
          for (const stream of when === 'both' ? [false, true] : [when === 'streamed'])
            await servedBy(gw, format, stream, SERVED[format][0], SERVED[format][1], fault);
        });
  });

  describe('no fallback once bytes reached the caller, and none left to take', () => {
    for (const format of V1_FORMATS) {
      it(`${format}: a stream cut after its first output is not retried elsewhere: the bytes and an error event, settled once`, async () => {
        const u = await caller(gw);
        upstream.reset();
        const seen = await callV1(u.clients, format, { content: `cut once ${format} [[upstream:drop]]`, stream: true });
        expect(seen.status).toBe(200);
        expect(seen.failed).toBe(true);
        expect(upstream.requests.filter((r) => r.format !== 'models')).toHaveLength(1);
        const s = await settlementOf(gw, u.sub);
        expect(s.closes).toBe(1);
        expect(s.charged).toBeGreaterThan(0);
        // Cut by the upstream: at the hold on the fast path; on the SDK path the input plus the bytes received, at most the hold.
        if (path === 'pass-through') expect(s.charged).toBe(s.held);
        else expect(s.charged).toBeLessThanOrEqual(s.held);
      });

      it(`${format}: every target fails (500 each): the last failure is the answer, plain and streamed, nothing charged`, async () => {
        for (const stream of [false, true]) {
          const u = await caller(gw);
          upstream.reset();
          upstream.failNext({ kind: 'status', status: 500 }, 3);
          const seen = await callV1(u.clients, format, { content: `all fail ${format}`, stream });
          expect(seen.status).toBe(502);
          expect(seen.failed).toBe(true);
          expect(upstream.requests.filter((r) => r.format !== 'models')).toHaveLength(3);
          expect(await settlementOf(gw, u.sub)).toMatchObject({ kind: 'release', charged: 0, closes: 1 });
          const b = await gw.runtime.billing.balances(u.sub);
          expect(b.subscription + b.one_time).toBe(START);
        }
      });
    }
  });

  it('connection refused: the provider whose address answers nothing is left for the next one, each format, plain and streamed', async () => {
    // A port that was free a moment ago and is closed now: connections to it are refused.
    const dead = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const down = (id: 'openai' | 'anthropic') => ({
      providers: {
        ...upstream.aiConfig({ apiKey: 'sk-server-x' }).providers,
        [id]: { baseUrl: `http://127.0.0.1:${dead}/v1`, apiKey: 'sk-server-x' },
      },
    });
    const openaiDown = await startAiServer(upstream, serverConfig(down('openai')), { path });
    const anthropicDown = await startAiServer(upstream, serverConfig(down('anthropic')), { path });
    try {
      for (const stream of [false, true]) {
        // OpenAI's two models are both unreachable: Anthropic's answers (the SDK path for these formats).
        await servedBy(openaiDown, 'chat', stream, '', 'anthropic/claude-haiku-4-5');
        await servedBy(openaiDown, 'responses', stream, '', 'anthropic/claude-haiku-4-5');
        await servedBy(anthropicDown, 'messages', stream, '', 'openai/gpt-4.1');
      }
    } finally {
      await openaiDown.stop();
      await anthropicDown.stop();
    }
  });
});
