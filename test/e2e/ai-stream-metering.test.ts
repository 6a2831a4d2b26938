import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import OpenAI from 'openai';
import { estimateTokens, type AppRouter } from '@ai-backend/core/internal';
import { waitFor } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  reservedFor,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Streaming metering over a real server and real clients (the router tests do the same
 * in-process): 60 concurrent streams through `@trpc/client`'s httpBatchStreamLink against a
 * balance for exactly 10, and streams read with the `openai` client and cancelled at different
 * points, each settled once for what it produced.
 */
const CALLS = 60;
const AFFORDABLE = 10;
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 40;
const content = (i: number) => `streamed call ${String(i).padStart(2, '0')}`;

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

describeV1Paths('ai-stream-metering', (path) => {
  beforeAll(async () => {
    // Input counted as the server's worst case and output = maxTokens: every stream uses exactly its hold.
    upstream = await createTestUpstream({
      outputTokens: 1000,
      latencyMs: 20,
      chunkDelayMs: 2,
      countInputTokens: (system, text) => estimateTokens(text, system, 0),
    });
    // One client opens 60 streams at once to race the balance: above the default stream caps (16
    // per address, 32 per identity; test/e2e/stream-caps.test.ts covers those), so raised here.
    gw = await startAiServer(
      upstream,
      {
        storage: { type: 'memory' },
        limits: { maxSseStreamsPerClient: 100, maxSseStreamsPerIdentity: 100 },
      },
      { path },
    );
    admin = await tokenFor('sm-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  describe(`${CALLS} concurrent streams over tRPC against a balance for ${AFFORDABLE}`, () => {
    it('exactly the affordable number stream, each charged in full; the rest are refused before any upstream request', async () => {
      const sub = 'sm-burst';
      const perCall = reservedFor(content(0), SYSTEM, MAX_TOKENS);
      await creditTokens(gw.url, admin, sub, AFFORDABLE * perCall, 'sm-burst-credit');
      const token = await tokenFor(sub);
      const client = createTRPCClient<AppRouter>({
        links: [
          httpBatchStreamLink({
            url: gw.url + '/trpc',
            transformer: superjson,
            headers: () => ({ authorization: `Bearer ${token}` }),
            maxItems: 1,
          }),
        ],
      });
      upstream.reset();
      const results = await Promise.allSettled(
        Array.from({ length: CALLS }, async (_, i) => {
          const events: Array<{ type: string; result?: any }> = [];
          for await (const e of await client.ai.streamText.mutate({
            content: content(i),
            systemPrompt: SYSTEM,
            provider: (['anthropic', 'openai', 'google', 'openrouter'] as const)[i % 4],
            options: { maxTokens: MAX_TOKENS },
          }))
            events.push(e as never);
          return events;
        }),
      );
      const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(ok).toHaveLength(AFFORDABLE);
      expect(refused.every((e) => e instanceof TRPCClientError && e.data?.code === 'PAYMENT_REQUIRED')).toBe(true);
      for (const events of ok) expect(events.at(-1)!.result.tokenUsage).toMatchObject({ tokensCharged: perCall });
      expect(upstream.requests.filter((q) => q.content.startsWith('streamed call'))).toHaveLength(AFFORDABLE);
      const b = await gw.runtime.billing.balances(sub);
      expect(b.subscription + b.one_time).toBe(0);
      const entries = await gw.runtime.billing.ledger.entries(sub);
      expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(AFFORDABLE);
      expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
    });
  });

  describe('streams read with the openai client and cancelled at different points', () => {
    it('each is settled once for what it produced (input + bytes received at least, the hold at most), the rest released', async () => {
      const sub = 'sm-cancel';
      const START = 200_000;
      await creditTokens(gw.url, admin, sub, START, 'sm-cancel-credit');
      const token = await tokenFor(sub);
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
      const N = 12;
      const outcomes = await Promise.all(
        Array.from({ length: N }, async (_, i) => {
          const { data: stream, response } = await client.chat.completions
            .create({
              model: ['anthropic', 'openai', 'google', 'openrouter'][i % 4]!,
              messages: [{ role: 'user', content: `count slowly ${i} [[upstream:chunk-delay=15]]` }],
              max_tokens: 200,
              stream: true,
            })
            .withResponse();
          // On the pass-through path (docs/ai.md#pass-through) the chunks are the upstream's: our request id is in a header.
          const passThrough = response.headers.get('x-ai-backend-path') === 'pass-through';
          // Stop after 1..N text chunks (the later ones complete).
          const stop = 1 + ((i * 5) % 14);
          let text = '';
          let chunks = 0;
          let requestId = response.headers.get('x-ai-backend-request-id') ?? '';
          let completed = false;
          for await (const chunk of stream) {
            requestId ||= chunk.id.replace(/^chatcmpl-/, '');
            const delta = chunk.choices[0]?.delta?.content ?? '';
            text += delta;
            if (chunk.choices[0]?.finish_reason) completed = true;
            if (delta && ++chunks >= stop && !completed) {
              stream.controller.abort();
              break;
            }
          }
          return { requestId, text, completed, passThrough };
        }),
      );
      expect(outcomes.some((o) => !o.completed)).toBe(true);
      // With the fast path on, both paths are among the streams left early (openai and openrouter are
      // passed through, anthropic and google take the SDK); with it off, none is passed through.
      if (path === 'pass-through') {
        expect(outcomes.some((o) => !o.completed && o.passThrough)).toBe(true);
        expect(outcomes.some((o) => !o.completed && !o.passThrough)).toBe(true);
      } else expect(outcomes.some((o) => o.passThrough)).toBe(false);
      // The server notices each closed connection and settles it.
      const entries = await waitFor(
        async () => {
          const all = await gw.runtime.billing.ledger.entries(sub);
          return all.filter((e) => e.kind === 'settle').length >= N ? all : undefined;
        },
        { what: `${N} settlements` },
      );
      let charged = 0;
      for (const o of outcomes) {
        const mine = entries.filter((e) => e.requestId === o.requestId && e.kind === 'settle');
        expect(mine).toHaveLength(1);
        const used = mine[0]!.usage!.tokensUsed;
        expect(used).toBeGreaterThanOrEqual(Buffer.byteLength(o.text));
        // Never more than was held for it.
        const held = -entries
          .filter((e) => e.requestId === o.requestId && e.kind === 'reserve')
          .flatMap((e) => e.lines)
          .reduce((sum, l) => sum + l.delta, 0);
        expect(held).toBeGreaterThan(0);
        expect(mine[0]!.usage!.tokensCharged).toBeLessThanOrEqual(held);
        // Left early, on either path (docs/ai.md#pass-through): input plus what was received, not the hold.
        if (!o.completed) expect(mine[0]!.usage!.tokensCharged).toBeLessThan(held);
        charged += mine[0]!.usage!.tokensCharged;
      }
      const b = await gw.runtime.billing.balances(sub);
      expect(b.subscription + b.one_time).toBe(START - charged);
      expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
    });
  });
});
