import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createTRPCClient, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import OpenAI from 'openai';
import type { AppRouter } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * A streamed call is observed until its stream ends (issue 21): its statistics, its metrics
 * (outcome, latency, tokens), its Live-view entry and its span say how the STREAM ended, not how
 * the procedure that returned it did. The test upstream drops the connection after three frames
 * (`[[upstream:drop]]`), with a delay between frames so the stream outlives the procedure call
 * by a known lower bound.
 */
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const CHUNK_DELAY_MS = 80;

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let user: string;
beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  upstream = await createTestUpstream({ outputTokens: 40 });
  gw = await startAiServer(upstream, { storage: { type: 'memory' }, metrics: { port: 0 } });
  admin = await tokenFor('so-admin', { admin: true });
  await creditTokens(gw.url, admin, 'so-user', 1_000_000, 'so-credit');
  user = await tokenFor('so-user');
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
  trace.disable();
  context.disable();
});

/** The sum of a metric's samples with these labels (others free). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[4]);
  }
  return sum;
}
const scrape = async () => (await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${admin}` } })).text();
const outcomes = (text: string, entry: string) => ({
  ok: sample(text, 'ai_backend_requests_total', { entry, procedure: 'ai.streamText', outcome: 'ok' }),
  failed: sample(text, 'ai_backend_requests_total', { entry, procedure: 'ai.streamText', outcome: 'BAD_GATEWAY' }),
});
const tokensTotal = (text: string) => sample(text, 'ai_backend_tokens_total', { provider: 'openai', payer: 'platform' });
const statsOf = async (transport: string) =>
  (await gw.runtime.stats.snapshot(1)).procedures.find((p) => p.transport === transport && p.path === 'ai.streamText') ?? {
    count: 0,
    errors: 0,
  };
const lastCall = (entry: string) => gw.runtime.recentCalls.list(500).find((c) => c.entry === entry && c.procedure === 'ai.streamText');
const spanMs = (s: ReadableSpan) => s.duration[0] * 1000 + s.duration[1] / 1e6;
const streamSpans = () => exporter.getFinishedSpans().filter((s) => s.name === 'procedure ai.streamText');
/** What the ledger settled for the user's last call (the partial charge of a cut stream). */
const lastSettledTokens = async () =>
  (await gw.runtime.billing.ledger.entries('so-user')).filter((e) => e.kind === 'settle').at(-1)?.usage?.tokensUsed;

const trpc = () =>
  createTRPCClient<AppRouter>({
    links: [httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${user}` }) })],
  });

describe('ai.streamText over tRPC (httpBatchStreamLink)', () => {
  it('a stream the upstream drops mid-way is one failed call in statistics, metrics, recent calls and its span, ended with the stream', async () => {
    const before = { metrics: await scrape(), stats: await statsOf('trpc') };
    exporter.reset();
    const received: string[] = [];
    let failure: unknown;
    try {
      for await (const e of await trpc().ai.streamText.mutate({
        content: `tell me [[upstream:drop]] [[upstream:chunk-delay=${CHUNK_DELAY_MS}]]`,
        provider: 'openai',
        systemPrompt: 'be brief',
        options: { maxTokens: 40 },
      })) {
        if (e.type === 'text') received.push(e.delta);
      }
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect((failure as TRPCClientError<AppRouter>).data?.code).toBe('BAD_GATEWAY');
    // Output reached the client before the drop: this is a failure mid-stream, not before it.
    expect(received.length).toBeGreaterThan(0);

    await waitFor(() => streamSpans().length === 1);
    const after = await scrape();
    expect(outcomes(after, 'trpc').failed).toBe(outcomes(before.metrics, 'trpc').failed + 1);
    expect(outcomes(after, 'trpc').ok).toBe(outcomes(before.metrics, 'trpc').ok);
    // The partial charge is counted once, as the ledger settled it.
    const charged = await lastSettledTokens();
    expect(charged).toBeGreaterThan(0);
    expect(tokensTotal(after) - tokensTotal(before.metrics)).toBe(charged);
    const stats = await statsOf('trpc');
    expect(stats.count - before.stats.count).toBe(1);
    expect(stats.errors - before.stats.errors).toBe(1);
    expect(lastCall('trpc')).toMatchObject({ status: 'BAD_GATEWAY', tokens: null });
    const [span] = streamSpans();
    expect(span!.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(span!.attributes['ai_backend.tokens']).toBe(charged);
    // The span covers the stream: at least the two frame delays before the drop (the
    // procedure itself returns its generator long before the first frame).
    expect(spanMs(span!)).toBeGreaterThanOrEqual(2 * CHUNK_DELAY_MS);
  });

  it('a stream that completes is one ok call with its final token count', async () => {
    const before = await scrape();
    exporter.reset();
    let finish: { data: { usage: { totalTokens: number | null } } } | undefined;
    for await (const e of await trpc().ai.streamText.mutate({
      content: `count [[upstream:chunk-delay=5]]`,
      provider: 'openai',
      systemPrompt: 'be brief',
      options: { maxTokens: 40 },
    })) {
      if (e.type === 'finish') finish = e.result as never;
    }
    expect(finish?.data.usage.totalTokens).toBeGreaterThan(0);
    await waitFor(() => streamSpans().length === 1);
    const after = await scrape();
    expect(outcomes(after, 'trpc').ok).toBe(outcomes(before, 'trpc').ok + 1);
    expect(lastCall('trpc')).toMatchObject({ status: 'ok', tokens: finish!.data.usage.totalTokens });
    const [span] = streamSpans();
    expect(span!.status.code).not.toBe(2);
    expect(span!.attributes['ai_backend.tokens']).toBe(await lastSettledTokens());
  });
});

describe('/v1/chat/completions with stream: true (the openai client)', () => {
  it('a stream the upstream drops mid-way is one failed ai.streamText call under entry "openai"', async () => {
    const before = { metrics: await scrape(), stats: await statsOf('openai') };
    exporter.reset();
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: user, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'openai/gpt-5-mini',
      messages: [{ role: 'user', content: `tell me [[upstream:drop]] [[upstream:chunk-delay=${CHUNK_DELAY_MS}]]` }],
      max_tokens: 40,
      stream: true,
    });
    let text = '';
    let failure: unknown;
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeDefined();
    expect(text.length).toBeGreaterThan(0);

    await waitFor(() => streamSpans().length === 1);
    const after = await scrape();
    expect(outcomes(after, 'openai').failed).toBe(outcomes(before.metrics, 'openai').failed + 1);
    expect(outcomes(after, 'openai').ok).toBe(outcomes(before.metrics, 'openai').ok);
    const charged = await lastSettledTokens();
    expect(tokensTotal(after) - tokensTotal(before.metrics)).toBe(charged);
    const stats = await statsOf('openai');
    expect(stats.errors - before.stats.errors).toBe(1);
    expect(lastCall('openai')).toMatchObject({ status: 'BAD_GATEWAY' });
    const [span] = streamSpans();
    expect(span!.status.code).toBe(2);
    expect(spanMs(span!)).toBeGreaterThanOrEqual(2 * CHUNK_DELAY_MS);
  });
});
