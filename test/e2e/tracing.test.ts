import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
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
 * What an operator does to get traces: register an SDK (here with the in-memory exporter and the
 * AsyncLocalStorage context manager), then every request, procedure, upstream call and storage
 * operation is a span of one tree, continuing the caller's W3C trace.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

let upstream: TestUpstream;
let gw: AiServer;
let user: string;
beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  await creditTokens(gw.url, await tokenFor('trace-admin', { admin: true }), 'trace-user', 100_000, 'trace-1');
  user = await tokenFor('trace-user');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
  trace.disable();
  context.disable();
  propagation.disable();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('tracing through @opentelemetry/api', () => {
  it('continues the caller trace: request → procedure → upstream call (traceparent sent upstream) and storage spans', async () => {
    exporter.reset();
    upstream.reset();
    const res = await fetch(gw.url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ai.generateText',
        params: { content: 'hi', systemPrompt: 'be brief', provider: 'openai' },
      }),
    });
    expect(((await res.json()) as { result?: { success: boolean } }).result?.success).toBe(true);
    const spans = exporter.getFinishedSpans();
    // Every span belongs to the caller's trace.
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([TRACE_ID]));

    const request = spans.find((s) => s.name === 'POST rpc')!;
    expect(request).toBeDefined();
    expect(parentOf(request)).toBe(CALLER_SPAN);
    expect(request.attributes['http.response.status_code']).toBe(200);

    const procedure = spans.find((s) => s.name === 'procedure ai.generateText')!;
    expect(parentOf(procedure)).toBe(request.spanContext().spanId);
    expect(procedure.attributes['ai_backend.entry']).toBe('rpc');

    const upstreamSpan = spans.find((s) => s.name === 'POST openai')!;
    expect(upstreamSpan.attributes['gen_ai.request.model']).toEqual(expect.any(String));
    // The upstream span sits under the procedure (possibly through SDK-internal spans: none here).
    expect(parentOf(upstreamSpan)).toBe(procedure.spanContext().spanId);

    const storageSpans = spans.filter((s) => s.name.startsWith('storage.'));
    expect(storageSpans.length).toBeGreaterThan(0);
    // Storage spans sit under whatever ran them: the procedure (billing) or the request (the request
    // pipeline's own counters); never outside the tree.
    for (const s of storageSpans) expect([procedure.spanContext().spanId, request.spanContext().spanId]).toContain(parentOf(s));
    expect(storageSpans.some((s) => parentOf(s) === procedure.spanContext().spanId)).toBe(true);

    // W3C trace context reached the provider: same trace, the upstream span as parent.
    const sent = upstream.requests.at(-1)!.headers.traceparent;
    expect(sent).toBe(`00-${TRACE_ID}-${upstreamSpan.spanContext().spanId}-01`);
    // And no credential in any span attribute.
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(user);
  });

  it('the /v1 API: request span POST v1 → procedure → upstream POST openai, also when streaming', async () => {
    for (const stream of [false, true]) {
      exporter.reset();
      const res = await fetch(gw.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
        body: JSON.stringify({ model: 'openai/gpt-5-mini', stream, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
      const procedure = await waitFor(() => exporter.getFinishedSpans().find((s) => s.name.startsWith('procedure ai.')), {
        what: 'the procedure span',
      });
      const spans = exporter.getFinishedSpans();
      const request = spans.find((s) => s.name === 'POST v1')!;
      expect(parentOf(request)).toBe(CALLER_SPAN);
      expect(parentOf(procedure)).toBe(request.spanContext().spanId);
      const upstreamSpans = spans.filter((s) => s.name === 'POST openai');
      expect(upstreamSpans.length).toBeGreaterThan(0);
      for (const s of upstreamSpans) expect(parentOf(s)).toBe(procedure.spanContext().spanId);
    }
  });

  it('starts a new trace when the caller sends none, and marks failed procedures', async () => {
    exporter.reset();
    const res = await fetch(gw.url + '/trpc/admin.status', { headers: { authorization: `Bearer ${user}` } });
    expect(res.status).toBe(403);
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'GET trpc')!;
    expect(parentOf(request)).toBeUndefined();
    expect(request.spanContext().traceId).not.toBe(TRACE_ID);
    const procedure = spans.find((s) => s.name === 'procedure admin.status')!;
    expect(parentOf(procedure)).toBe(request.spanContext().spanId);
    expect(procedure.status).toMatchObject({ code: 2, message: 'FORBIDDEN' });
  });
});
