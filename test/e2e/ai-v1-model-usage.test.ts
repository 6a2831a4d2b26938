import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamFault } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths, type V1Path } from './helpers/describeMatrix.js';
import { V1_FORMATS, v1Clients, type V1Clients, type V1Format } from './helpers/v1Call.js';
import { askV1, type V1Answer } from './helpers/v1Answer.js';

/**
 * `model` and `usage` on /v1 for every answer shape (docs/ai.md, "OpenAI-compatible endpoint",
 * "Pass-through", "Response cache"): for the three wire formats, plain and streamed, on both paths,
 * a plain answer, an answer a fallback served after the first target failed, an upstream that
 * reports no usage (charged its hold), and the cache hit of each; and a stream cut before its usage
 * event. In every cell the `model` the official client reads names the target that served (the
 * name asked for when that target served, else the fallback's), the same on a hit as on the answer
 * it replays; and the usage the client parsed is the tokens the ledger charged for that call, read
 * back through `billing.getUsageHistory` (the cache charges a hit its whole original usage here:
 * `chargeRatio` 1). A passed-through answer is the provider's own body: where that carries no usage,
 * the client reads none, and a plain one says the charge in `x-ai-backend-tokens-charged`.
 */
const REQUESTED: Record<V1Format, string> = { chat: 'mx-chat', responses: 'mx-chat', messages: 'mx-msg' };
const TARGET: Record<V1Format, { provider: string; model: string }> = {
  chat: { provider: 'openai', model: 'gpt-4.1-mini' },
  responses: { provider: 'openai', model: 'gpt-4.1-mini' },
  messages: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
};
const FALLBACK = { provider: 'openai', model: 'gpt-4.1' };

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;

interface UsageItem {
  requestId?: string;
  provider: string;
  model: string;
  tokensUsed: number;
  tokensCharged: number;
  metadata?: { cache?: string };
}

describeV1Paths('/v1 model and usage in every answer shape', (path: V1Path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    gw = await startAiServer(
      upstream,
      {
        ai: {
          aliases: { 'mx-chat': 'openai/gpt-4.1-mini', 'mx-msg': 'anthropic/claude-sonnet-4-5' },
          cache: { enabled: true, chargeRatio: 1 },
          fallbacks: [`${FALLBACK.provider}/${FALLBACK.model}`],
          retry: { backoffMs: 5, maxBackoffMs: 20 },
          circuitBreaker: { failureThreshold: 1000 },
        },
      },
      { path },
    );
    admin = await tokenFor('mu-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  async function caller(): Promise<{ token: string; clients: V1Clients }> {
    const sub = `mu-${path}-${++users}`;
    await creditTokens(gw.url, admin, sub, 100_000, `mu-${sub}`);
    const token = await tokenFor(sub);
    return { token, clients: v1Clients(gw.url, token) };
  }

  /** The caller's usage record of one call, read through billing.getUsageHistory once it landed. */
  function charged(token: string, requestId: string | null): Promise<UsageItem> {
    expect(requestId).toBeTruthy();
    return waitFor(
      async () => {
        const r = await rpcCall<{ usage: UsageItem[] }>(gw.url, token, 'billing.getUsageHistory', { limit: 100 });
        return r.result?.usage.find((u) => u.requestId === requestId);
      },
      { what: `the usage record of ${requestId}` },
    );
  }

  /** One call with `fault` queued for its upstream request (cleared after: a hit sends none). */
  async function ask(
    u: { clients: V1Clients },
    format: V1Format,
    a: { content: string; stream: boolean; noCache?: boolean },
    fault?: UpstreamFault,
  ) {
    if (fault) upstream.failNext(fault);
    try {
      return await askV1(u.clients, format, { model: REQUESTED[format], ...a });
    } finally {
      upstream.reset();
    }
  }

  /**
   * The checks of one answer: it names the target that served (one model throughout a stream), and
   * the usage its client read is what the ledger charged for it (`unreadable`: the upstream's usage
   * could not be read, so the call was charged its hold); a passed-through plain answer also says
   * the charge in `x-ai-backend-tokens-charged`.
   */
  async function check(
    token: string,
    format: V1Format,
    a: V1Answer,
    served: { provider: string; model: string },
    unreadable: boolean,
  ): Promise<UsageItem> {
    expect(a.failed).toBe(false);
    expect(a.text).toMatch(/^Test reply/);
    expect(new Set(a.models).size).toBe(1);
    const names = [`${served.provider}/${served.model}`, served.model];
    const asked = TARGET[format].provider === served.provider && TARGET[format].model === served.model;
    expect(asked ? [...names, REQUESTED[format]] : names).toContain(a.models[0]);
    const item = await charged(token, a.requestId);
    expect(item).toMatchObject(served);
    if (a.tokensCharged !== null) expect(Number(a.tokensCharged)).toBe(item.tokensCharged);
    if (passedStream(a) && unreadable) {
      // Not yet: a passed-through stream's events go on as they came, its usage event too, so the
      // client reads the provider's unreadable report or none, below the hold it was charged
      // (docs/ai.md, "Pass-through"); the charge is in the caller's usage history.
      expect(a.usage ?? 0).toBeLessThan(item.tokensUsed);
    } else expect(a.usage).toBe(item.tokensUsed);
    return item;
  }
  const passedStream = (a: V1Answer) => a.path === 'pass-through' && a.tokensCharged === null;

  /**
   * A fresh answer without the cache (on the pass-through path a stream is then passed through), a
   * miss that stores its answer, and hits of it until one is served: each checked, the hit's `model`
   * the miss's, its usage its charge (the miss's usage).
   */
  async function cell(
    format: V1Format,
    stream: boolean,
    content: string,
    fault: UpstreamFault | undefined,
    served: { provider: string; model: string },
    unreadable = false,
  ) {
    const u = await caller();
    await check(u.token, format, await ask(u, format, { content, stream, noCache: true }, fault), served, unreadable);
    const miss = await ask(u, format, { content, stream }, fault);
    expect(miss.cache).toBe('miss');
    const missed = await check(u.token, format, miss, served, unreadable);
    const hit = await waitFor(
      async () => {
        const a = await ask(u, format, { content, stream }, fault);
        return a.cache === 'hit' ? a : undefined;
      },
      { what: 'a cache hit' },
    );
    const item = await check(u.token, format, hit, served, unreadable);
    expect(item.metadata?.cache).toBe('hit');
    expect(item.tokensUsed).toBe(missed.tokensUsed);
    expect(hit.models[0]).toBe(miss.models[0]);
    return { miss, hit, item };
  }

  for (const format of V1_FORMATS)
    for (const stream of [false, true]) {
      const how = `${format} ${stream ? 'streamed' : 'plain'}`;
      describe(how, () => {
        it('a plain answer and its cache hit', async () => {
          await cell(format, stream, `mu plain ${how}`, undefined, TARGET[format]);
        });

        it('an answer a fallback served after the first target failed, and its cache hit', async () => {
          await cell(format, stream, `mu fallback ${how}`, { kind: 'status', status: 503 }, FALLBACK);
        });

        it('an upstream that reports no usage (charged the hold), and its cache hit', async () => {
          // Zero input tokens is "not reported" (docs/ai.md, "Metering"): Anthropic's schema always has usage.
          const { item } = await cell(format, stream, `mu no usage ${how}`, { kind: 'usage', values: { input: 0 } }, TARGET[format], true);
          expect(item.tokensUsed).toBeGreaterThan(64);
        });

        // The Messages API always reports usage (the test upstream's no-usage marker leaves it be
        // there): the cell exists for the OpenAI formats only, and a cut stream only for streams.
        if (format !== 'messages')
          it('an upstream that sends no usage at all, and its cache hit', async () => {
            const { item } = await cell(format, stream, `mu none ${how} [[upstream:no-usage]]`, undefined, TARGET[format], true);
            expect(item.tokensUsed).toBeGreaterThan(64);
          });

        if (stream)
          it('a stream cut before its usage event: the client raises, and read no usage', async () => {
            for (const noCache of [true, false]) {
              const u = await caller();
              const a = await ask(u, format, { content: `mu cut ${how} ${noCache} [[upstream:truncate=2]]`, stream, noCache });
              expect(a.failed).toBe(true);
              expect(a.text).toMatch(/^Test reply/);
              expect(a.usage).toBeUndefined();
              const item = await charged(u.token, a.requestId);
              expect(item).toMatchObject(TARGET[format]);
              expect(new Set(a.models).size).toBeLessThanOrEqual(1);
            }
          });
      });
    }
});
