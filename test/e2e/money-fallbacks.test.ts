import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpBatchStreamLink } from '@trpc/client';
import superjson from 'superjson';
import OpenAI from 'openai';
import type { AppRouter } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Money limits cover every target a call may reach (issue 35): a USD budget, the user's or the
 * API key's, refuses an unpriced model asked for directly, so it must not be reached as a
 * fallback either (its $0 charge would go past the limit's bound). The first target (priced)
 * fails with a 500; the configured fallback has no price. Under a money limit the call fails
 * with the first target's error, the upstream sees one request and nothing is charged; without
 * one (the control) the same call is served by the fallback. Over /v1 (openai client, plain and
 * streamed), JSON-RPC ai.generateText and tRPC ai.streamText.
 */
const PRIMARY = 'gpt-5-mini';
const UNPRICED = 'unlisted-local-model';

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

describeV1Paths('money-fallbacks', (path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(
      upstream,
      {
        storage: { type: 'memory' },
        ai: { fallbacks: [`openai/${UNPRICED}`], retry: { backoffMs: 1, maxBackoffMs: 2 }, circuitBreaker: { failureThreshold: 1000 } },
      },
      { path },
    );
    admin = await tokenFor('mf-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  type Limit = 'user budget' | 'key budget' | 'no money limit';
  let users = 0;

  /** A funded caller under `limit`: its bearer credential (a JWT, or an API key with a USD budget). */
  async function caller(limit: Limit): Promise<{ sub: string; bearer: string }> {
    const sub = `mf-user-${++users}`;
    await creditTokens(gw.url, admin, sub, 1_000_000, `mf-${sub}`);
    const token = await tokenFor(sub);
    if (limit === 'user budget') {
      const r = await rpcCall(gw.url, admin, 'admin.setBudget', { userId: sub, period: 'monthly', usd: 5 });
      expect(r.error).toBeUndefined();
    }
    if (limit === 'key budget') {
      const r = await rpcCall<{ key: string }>(gw.url, token, 'keys.create', { name: 'ci', budget: { total: { usd: 5 } } });
      expect(r.error).toBeUndefined();
      return { sub, bearer: r.result!.key };
    }
    return { sub, bearer: token };
  }

  type Entry = 'v1 chat' | 'v1 chat stream' | 'rpc ai.generateText' | 'trpc ai.streamText';

  /** One call over `entry`; resolves with the text served, or 'failed' when the call failed. */
  async function callOnce(entry: Entry, bearer: string): Promise<string> {
    if (entry === 'rpc ai.generateText') {
      const r = await rpcCall(gw.url, bearer, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        model: `openai/${PRIMARY}`,
        options: { maxTokens: 16 },
      });
      if (r.error) {
        expect(r.error.data?.details).toMatchObject({ reason: 'upstream_5xx' });
        return 'failed';
      }
      return r.result.data.text;
    }
    if (entry === 'trpc ai.streamText') {
      const client = createTRPCClient<AppRouter>({
        links: [
          httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${bearer}` }) }),
        ],
      });
      let text = '';
      try {
        const stream = await client.ai.streamText.mutate({
          content: 'hi',
          systemPrompt: 's',
          model: `openai/${PRIMARY}`,
          options: { maxTokens: 16 },
        });
        for await (const e of stream as AsyncIterable<{ type: string; text?: string; delta?: string; error?: unknown }>) {
          if (e.type === 'error') return 'failed';
          text += e.delta ?? e.text ?? '';
        }
      } catch {
        return 'failed';
      }
      return text;
    }
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: bearer, maxRetries: 0 });
    try {
      if (entry === 'v1 chat') {
        const r = await client.chat.completions.create({
          model: `openai/${PRIMARY}`,
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        });
        return r.choices[0]!.message.content ?? '';
      }
      const stream = await client.chat.completions.create({
        model: `openai/${PRIMARY}`,
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    } catch (err) {
      expect(err).toBeInstanceOf(OpenAI.APIError);
      return 'failed';
    }
  }

  const ENTRIES: Entry[] = ['v1 chat', 'v1 chat stream', 'rpc ai.generateText', 'trpc ai.streamText'];

  describe('an unpriced fallback is never reached under a money limit', () => {
    for (const limit of ['user budget', 'key budget'] as const) {
      for (const entry of ENTRIES) {
        it(`${limit}, ${entry}: the first target's failure is the answer, one upstream request, nothing charged`, async () => {
          const c = await caller(limit);
          upstream.reset();
          upstream.failNext({ kind: 'status', status: 500 });
          expect(await callOnce(entry, c.bearer)).toBe('failed');
          expect(upstream.requests.filter((q) => q.format !== 'models').map((q) => q.model)).toEqual([PRIMARY]);
          const entries = await gw.runtime.billing.ledger.entries(c.sub);
          expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(0);
          const b = await gw.runtime.billing.balances(c.sub);
          expect(b.subscription + b.one_time).toBe(1_000_000);
        });
      }
    }

    for (const entry of ENTRIES) {
      it(`no money limit, ${entry}: the same call is served by the unpriced fallback`, async () => {
        const c = await caller('no money limit');
        upstream.reset();
        upstream.failNext({ kind: 'status', status: 500 });
        expect(await callOnce(entry, c.bearer)).toMatch(new RegExp(UNPRICED));
        expect(upstream.requests.filter((q) => q.format !== 'models').map((q) => q.model)).toEqual([PRIMARY, UNPRICED]);
      });
    }

    it('a priced fallback still serves under a money limit, and the hold covers its price', async () => {
      const c = await caller('user budget');
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 500 });
      const r = await rpcCall(gw.url, c.bearer, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        model: `openai/${PRIMARY}`,
        fallbacks: ['openai/gpt-4.1'],
        options: { maxTokens: 16 },
      });
      expect(r.result?.data).toMatchObject({
        provider: 'openai',
        model: 'gpt-4.1',
        attempts: [{ provider: 'openai', reason: 'upstream_5xx' }],
      });
    });
  });
});
