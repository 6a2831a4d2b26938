// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * Streamable HTTP at wire level: session lifecycle (400 without a session id, 404 for an unknown
 * one, DELETE), MCP-Protocol-Version checks, the GET stream, JSON and SSE responses, several
 * concurrent streams, resumability with Last-Event-ID (memory and storage event stores, the
 * latter on redis shared by two server instances' stores), and stateless mode.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { z } from 'zod';
import {
  CoreError,
  createRuntime,
  createStorage,
  MemoryStorage,
  publicProcedure,
  resolveConfig,
  router,
  type ConfigInput,
  type Runtime,
} from '@ai-backend/core/internal';
import { McpHandler, mcpHandlerDeps, type McpHandlerOptions } from '@ai-backend/transports/mcp';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type Mode } from './helpers/testServer.js';
import { routeInProcess } from './helpers/inProcessOrigin.js';
import { call, LATEST, messagesOf, openWireSession, parseSse, readSse } from './helpers/mcpWire.js';
import { waitFor } from '@ai-backend/test-utils';
import { testRedis } from '@ai-backend/test-utils/services';
import { describeMatrix } from './helpers/describeMatrix.js';

// The tools below simulate work that takes time (a deliberate pause inside a procedure, not a test wait).
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const abortedTags: string[] = [];
const finishedTags: string[] = [];

const wireRouter = router({
  poll: publicProcedure
    .meta({ description: 'Closes its stream, then answers (SEP-1699)', mcp: {} })
    .input(z.object({ ms: z.number().int().max(2000).default(200) }).default({ ms: 200 }))
    .mutation(async ({ ctx, input }) => {
      const closable = typeof ctx.mcp?.closeStream === 'function';
      ctx.mcp?.closeStream?.();
      await sleep(input.ms);
      await ctx.mcp?.progress(1, 1, 'done');
      return { closable, answer: 'after reconnect' };
    }),
  wait: publicProcedure
    .meta({ description: 'Answers after a delay with progress', mcp: {} })
    .input(z.object({ ms: z.number().int().max(2000), tag: z.string() }))
    .mutation(async ({ ctx, input }) => {
      await ctx.mcp?.progress(0, 1);
      await sleep(input.ms);
      return input.tag;
    }),
  outlive: publicProcedure
    .meta({ description: 'Answers after a delay unless its signal aborts', mcp: {} })
    .input(z.object({ ms: z.number().int().max(2000), tag: z.string() }))
    .mutation(async ({ ctx, input }) => {
      const aborted = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), input.ms);
        ctx.req.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      (aborted ? abortedTags : finishedTags).push(input.tag);
      if (aborted) throw new CoreError('CANCELLED', 'cancelled');
      return `finished ${input.tag}`;
    }),
  jumpy: publicProcedure
    .meta({ description: 'Reports progress that repeats and steps back', mcp: {} })
    .input(z.object({}).default({}))
    .mutation(async ({ ctx }) => {
      for (const p of [1, 1, 0.5, 2, 2, 3]) await ctx.mcp?.progress(p, 3, `at ${p}`);
      return 'done';
    }),
  sample: publicProcedure
    .meta({ description: 'Asks for sampling', mcp: {} })
    .input(z.object({}).default({}))
    .mutation(async ({ ctx }) => ctx.mcp?.request('sampling/createMessage', { messages: [], maxTokens: 1 })),
});

const baseConfig: ConfigInput = {
  mcp: { auth: { authType: 'none' } },
  monitoring: { logging: { level: 'silent' } },
  customRouters: { wire: wireRouter },
};

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A bare Hono app around an McpHandler with explicit options (what createServer does by default). */
async function handlerServer(
  opts: McpHandlerOptions,
  runtime: Runtime | undefined,
  mode: Mode,
): Promise<{ url: string; runtime: Runtime }> {
  const rt = runtime ?? (await createRuntime(resolveConfig(baseConfig), { storage: new MemoryStorage() }));
  const handler = new McpHandler(mcpHandlerDeps(rt), opts);
  const app = new Hono();
  app.all('/mcp', handler.handle);
  if (mode === 'in-process') {
    const route = routeInProcess(async (req) => app.fetch(req));
    cleanups.push(async () => {
      route.release();
      await handler.close();
      if (!runtime) await rt.close();
    });
    return { url: `${route.url}/mcp`, runtime: rt };
  }
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  cleanups.push(async () => {
    await handler.close();
    await new Promise<void>((r) => server.close(() => r()));
    if (!runtime) await rt.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, runtime: rt };
}

const testRedisAt = await testRedis();

describeMatrix('MCP Streamable HTTP on the wire', (mode) => {
  describe('session lifecycle and headers (default server)', () => {
    it('400 without a session id, 404 for an unknown one, 400 for an unsupported protocol version', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const url = `${srv.url}/mcp`;
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

      expect((await fetch(url, { method: 'POST', headers, body: list })).status).toBe(400);
      expect((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } })).status).toBe(400);
      expect((await fetch(url, { method: 'DELETE' })).status).toBe(400);
      expect((await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': randomUUID() }, body: list })).status).toBe(404);

      const s = await openWireSession(url);
      const bad = await s.post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-protocol-version': '1999-01-01' });
      expect(bad.status).toBe(400);
      expect(await bad.text()).toMatch(/Unsupported protocol version/);
      // Absent header: assume the negotiated version.
      const noHeader = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': s.sessionId }, body: list });
      expect(noHeader.status).toBe(200);
      await noHeader.body?.cancel();
      // Every supported revision is accepted.
      for (const v of ['2025-03-26', '2025-06-18', LATEST]) {
        const ok = await s.post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { 'mcp-protocol-version': v });
        expect(ok.status, v).toBe(200);
        await ok.body?.cancel();
      }
    });

    it('the GET stream opens once per session; DELETE ends the session and later requests get 404', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const url = `${srv.url}/mcp`;
      const s = await openWireSession(url);
      const get = await fetch(url, { headers: s.headers({ accept: 'text/event-stream' }) });
      expect(get.status).toBe(200);
      expect(get.headers.get('content-type')).toMatch(/text\/event-stream/);
      const second = await fetch(url, { headers: s.headers({ accept: 'text/event-stream' }) });
      expect(second.status).toBe(409);
      await get.body?.cancel();

      const notification = await s.post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
      expect(notification.status).toBe(202);
      const del = await fetch(url, { method: 'DELETE', headers: s.headers() });
      expect(del.status).toBe(200);
      expect((await s.post({ jsonrpc: '2.0', id: 9, method: 'ping' })).status).toBe(404);
    });

    it('several concurrent POST streams on one session each get their own answer', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const s = await openWireSession(`${srv.url}/mcp`);
      const tags = ['a', 'b', 'c', 'd'];
      const responses = await Promise.all(
        tags.map((tag, i) => s.post(call(10 + i, 'wait', { ms: 200 - i * 40, tag }, { progressToken: `p${i}` }))),
      );
      for (const r of responses) expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
      const results = await Promise.all(responses.map((r) => readSse(r).then(messagesOf)));
      results.forEach((msgs, i) => {
        expect(msgs.find((m) => m.method === 'notifications/progress')?.params.progressToken).toBe(`p${i}`);
        const answer = msgs.find((m) => m.id === 10 + i);
        expect(answer?.result.content[0].text).toBe(tags[i]); // a string result is sent as plain text
      });
    });
  });

  describe('request ids', () => {
    it('a request reusing the id of one still in flight is refused with a JSON-RPC error naming it; the first keeps its answer; the id is free once answered', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const s = await openWireSession(`${srv.url}/mcp`);
      const first = await s.post(call(42, 'wait', { ms: 300, tag: 'first' }));
      expect(first.status).toBe(200);
      const second = await s.post(call(42, 'wait', { ms: 10, tag: 'second' }));
      expect(second.status).toBe(400);
      expect(await second.json()).toMatchObject({
        jsonrpc: '2.0',
        id: 42,
        error: { code: -32600, message: expect.stringMatching(/request id 42 is already used .* unique per MCP session/) },
      });
      // A string id "42" is another id (JSON-RPC), so it runs.
      const stringId = await s.post({ ...call(0, 'wait', { ms: 10, tag: 'string' }), id: '42' });
      expect(stringId.status).toBe(200);
      const answered = messagesOf(await readSse(first, (events) => messagesOf(events).some((m) => m.id === 42)));
      expect(answered.find((m) => m.id === 42)?.result.content[0].text).toBe('first');
      await stringId.body?.cancel();
      const again = await s.post(call(42, 'wait', { ms: 10, tag: 'again' }));
      expect(again.status).toBe(200);
      const reused = messagesOf(await readSse(again, (events) => messagesOf(events).some((m) => m.id === 42)));
      expect(reused.find((m) => m.id === 42)?.result.content[0].text).toBe('again');
    });
  });

  describe('cancelled requests', () => {
    const answers: Array<[string, NonNullable<ConfigInput>['mcp']]> = [
      ['session, SSE answers', {}],
      ['session, JSON answers', { responseMode: 'json' }],
      ['stateless, JSON answers', { sessionMode: 'stateless' }],
      ['stateless, SSE answers', { sessionMode: 'stateless', responseMode: 'sse' }],
    ];
    for (const [name, mcp] of answers) {
      it(`${name}: a request the client cancels is answered, so its POST ends and gives back its stream place`, async () => {
        // Two stream places per address: POSTs that never ended (the SDK never answers a
        // cancelled request) held theirs for good, and the third call got 429 from then on.
        const srv = await startTestServer(
          { ...baseConfig, mcp: { ...baseConfig.mcp, ...mcp }, limits: { maxSseStreamsPerClient: 2 } },
          mode,
        );
        cleanups.push(() => srv.stop());
        const s = await openWireSession(`${srv.url}/mcp`);
        for (let id = 1; id <= 4; id++) {
          // The tool ignores its signal and would answer after 2 s: the answer must come from the cancel.
          const posted = s.post(call(id, 'wait', { ms: 2000, tag: 'not cancelled' }));
          let answer: Record<string, any> | undefined;
          void posted.then(async (res) => {
            expect(res.status).toBe(200);
            const text = await res.text();
            answer = res.headers.get('content-type')?.includes('text/event-stream')
              ? messagesOf(parseSse(text)).find((m) => m.id === id)
              : JSON.parse(text);
          });
          // A cancel that arrives before the call is dispatched finds nothing in flight: sent again until the call ends.
          await waitFor(
            async () => {
              const cancel = await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
              await cancel.body?.cancel();
              return answer;
            },
            { timeoutMs: 1800, intervalMs: 50, what: `the answer to cancelled request ${id}` },
          );
          expect(answer).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32800 } });
        }
      });
    }
  });

  async function resumeAfterClose(url: string): Promise<void> {
    const s = await openWireSession(url);
    const post = await s.post(call(1, 'poll', { ms: 200 }, { progressToken: 'pp' }));
    expect(post.status).toBe(200);
    // The stream carries a priming event (id, retry, empty data) and is closed before the answer.
    const first = await readSse(post);
    expect(first[0]).toMatchObject({ data: '', retry: 1000 });
    expect(first[0]!.id).toBeTruthy();
    expect(messagesOf(first).some((m) => m.id === 1)).toBe(false);

    // A deliberate pause past the tool's 200 ms: the answer is produced while no stream is open,
    // which is the case under test (it must then come from the event store).
    await sleep(300);
    const resumed = await fetch(url, { headers: s.headers({ accept: 'text/event-stream', 'last-event-id': first.at(-1)!.id! }) });
    expect(resumed.status).toBe(200);
    const replay = messagesOf(await readSse(resumed, (ev) => messagesOf(ev).some((m) => m.id === 1)));
    expect(replay.find((m) => m.method === 'notifications/progress')?.params).toMatchObject({ progressToken: 'pp', progress: 1 });
    const answer = replay.find((m) => m.id === 1)!;
    expect(JSON.parse(answer.result.content[0].text)).toEqual({ closable: true, answer: 'after reconnect' });
  }

  it('progress notifications strictly increase (MCP: progress MUST increase): repeats and steps back are not sent', async () => {
    const srv = await startTestServer(baseConfig, mode);
    cleanups.push(() => srv.stop());
    const s = await openWireSession(`${srv.url}/mcp`);
    const events = await readSse(await s.post(call(1, 'jumpy', {}, { progressToken: 'j' })), (ev) =>
      messagesOf(ev).some((m) => m.id === 1),
    );
    const progress = messagesOf(events)
      .filter((m) => m.method === 'notifications/progress')
      .map((m) => m.params.progress);
    expect(progress).toEqual([1, 2, 3]);
  });

  describe('resumability (Last-Event-ID)', () => {
    it('memory event store: a call whose stream was closed is answered on the resumed stream', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      await resumeAfterClose(`${srv.url}/mcp`);
    });

    it('a stream the client drops is not a cancel: the call finishes and its answer is replayed on Last-Event-ID', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const s = await openWireSession(`${srv.url}/mcp`);
      const tag = `dropped-${mode}`;
      // Read the priming event, then drop the connection (readSse cancels the body) while the call runs.
      const first = await readSse(await s.post(call(1, 'outlive', { ms: 300, tag })), (ev) => ev.length > 0);
      expect(first[0]!.id).toBeTruthy();
      await waitFor(() => finishedTags.includes(tag) || abortedTags.includes(tag), { timeoutMs: 3000, what: 'the call to end' });
      expect(abortedTags).not.toContain(tag);
      const resumed = await fetch(`${srv.url}/mcp`, {
        headers: s.headers({ accept: 'text/event-stream', 'last-event-id': first[0]!.id! }),
      });
      expect(resumed.status).toBe(200);
      const answer = messagesOf(await readSse(resumed, (ev) => messagesOf(ev).some((m) => m.id === 1))).find((m) => m.id === 1)!;
      expect(answer.result.isError).toBeFalsy();
      expect(answer.result.content[0].text).toBe(`finished ${tag}`);
    });

    // Listening only: in process there is no connection whose closing the server could notice.
    it.skipIf(mode === 'in-process')(
      'without an event store nobody could receive the answer: dropping the stream cancels the call',
      async () => {
        const { url } = await handlerServer({ eventStore: 'none' }, undefined, mode);
        const s = await openWireSession(url);
        const tag = `no-store-${mode}`;
        const post = await s.post(call(1, 'outlive', { ms: 1500, tag }));
        await post.body?.cancel();
        await waitFor(() => abortedTags.includes(tag), { timeoutMs: 3000, what: 'the call aborted' });
        expect(finishedTags).not.toContain(tag);
      },
    );

    it.skipIf(!testRedisAt.ok)('storage event store on redis: events are written to and replayed from storage', async () => {
      const keyPrefix = `ai-backend-test:mcp-wire:${process.pid}:${randomUUID().slice(0, 8)}:`;
      const storage = await createStorage(
        resolveConfig({ storage: { type: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } } }).storage,
      );
      const runtime = await createRuntime(resolveConfig(baseConfig), { storage });
      cleanups.push(async () => {
        for (const key of await storage.keys('')) await storage.delete(key);
        await runtime.close(); // closes the storage too
      });
      const { url } = await handlerServer({ eventStore: 'storage' }, runtime, mode);
      await resumeAfterClose(url);
      expect((await storage.keys('mcp:ev:')).length).toBeGreaterThan(0);
    });

    it.skipIf(!testRedisAt.ok)(
      'two instances sharing redis: a session opened on one is served, and its stream resumed, by the other',
      async () => {
        const keyPrefix = `ai-backend-test:mcp-multi:${process.pid}:${randomUUID().slice(0, 8)}:`;
        const instance = async () => {
          const storage = await createStorage(
            resolveConfig({ storage: { type: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } } }).storage,
          );
          const runtime = await createRuntime(resolveConfig(baseConfig), { storage });
          cleanups.push(async () => {
            for (const key of await storage.keys('')) await storage.delete(key);
            await runtime.close();
          });
          return (await handlerServer({ eventStore: 'storage' }, runtime, mode)).url;
        };
        const [a, b] = [await instance(), await instance()];
        const onA = await openWireSession(a);
        const onB = {
          ...onA,
          url: b,
          post: (m: unknown, extra?: Record<string, string>) =>
            fetch(b, { method: 'POST', headers: onA.headers(extra), body: JSON.stringify(m) }),
        };

        // A call on B with A's session id: B takes the session over from its record.
        const greet = messagesOf(await readSse(await onB.post(call(1, 'greeting', { name: 'Lb' }))));
        expect(JSON.parse(greet.find((m) => m.id === 1)!.result.content[0].text).greeting).toBe('Hello, Lb!');

        // A stream closed on A is resumed on B from the shared event store.
        const first = await readSse(await onA.post(call(2, 'poll', { ms: 150 })));
        await sleep(300); // deliberate, as above: the answer is stored while no stream is open
        const resumed = await fetch(b, { headers: onA.headers({ accept: 'text/event-stream', 'last-event-id': first.at(-1)!.id! }) });
        expect(resumed.status).toBe(200);
        const replay = messagesOf(await readSse(resumed, (ev) => messagesOf(ev).some((m) => m.id === 2)));
        expect(JSON.parse(replay.find((m) => m.id === 2)!.result.content[0].text).answer).toBe('after reconnect');

        // An unknown session id is still 404 everywhere.
        expect(
          (
            await fetch(b, {
              method: 'POST',
              headers: onA.headers({ 'mcp-session-id': randomUUID() }),
              body: JSON.stringify(call(3, 'ping')),
            })
          ).status,
        ).toBe(404);
        // DELETE on B ends the session for every instance that has not loaded it yet.
        expect((await fetch(b, { method: 'DELETE', headers: onA.headers() })).status).toBe(200);
        const c = await instance();
        expect((await fetch(c, { method: 'POST', headers: onA.headers(), body: JSON.stringify(call(4, 'ping')) })).status).toBe(404);
      },
    );

    it('clients older than 2025-11-25 get no priming event and the answer on the POST stream', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const s = await openWireSession(`${srv.url}/mcp`, {}, '2025-06-18');
      const events = await readSse(await s.post(call(1, 'poll', { ms: 50 })));
      expect(events.every((e) => e.data !== '')).toBe(true);
      const answer = messagesOf(events).find((m) => m.id === 1)!;
      expect(JSON.parse(answer.result.content[0].text)).toEqual({ closable: false, answer: 'after reconnect' });
    });

    it('an unknown Last-Event-ID is refused with 400', async () => {
      const srv = await startTestServer(baseConfig, mode);
      cleanups.push(() => srv.stop());
      const s = await openWireSession(`${srv.url}/mcp`);
      const r = await fetch(`${srv.url}/mcp`, { headers: s.headers({ accept: 'text/event-stream', 'last-event-id': 'nope_7' }) });
      expect(r.status).toBe(400);
    });
  });

  describe('JSON responses', () => {
    it("mcp.responseMode 'json' answers POSTs with application/json bodies", async () => {
      const rt = await createRuntime(resolveConfig({ ...baseConfig, mcp: { auth: { authType: 'none' }, responseMode: 'json' } }), {
        storage: new MemoryStorage(),
      });
      cleanups.push(() => rt.close());
      const { url } = await handlerServer({}, rt, mode);
      const s = await openWireSession(url);
      const r = await s.post(call(1, 'greeting', { name: 'Ada', language: 'fr' }));
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      const body = await r.json();
      expect(JSON.parse(body.result.content[0].text)).toEqual({ greeting: 'Bonjour, Ada!', language: 'fr' });
    });
  });

  describe('stateless mode', () => {
    it('no session id, JSON answers, GET/DELETE 405, server-to-client requests refused clearly', async () => {
      const srv = await startTestServer({ ...baseConfig, mcp: { auth: { authType: 'none' }, sessionMode: 'stateless' } }, mode);
      cleanups.push(() => srv.stop());
      const url = `${srv.url}/mcp`;
      const s = await openWireSession(url, { sampling: {} });
      expect(s.sessionId).toBe('');
      const r = await s.post(call(1, 'greeting', { name: 'Bo' }));
      expect(r.status).toBe(200);
      expect(r.headers.get('mcp-session-id')).toBeNull();
      expect((await r.json()).result.content[0].text).toContain('Hello, Bo!');
      expect((await fetch(url, { headers: { accept: 'text/event-stream' } })).status).toBe(405);
      expect((await fetch(url, { method: 'DELETE' })).status).toBe(405);
      const sample = await (await s.post(call(2, 'sample'))).json();
      expect(sample.result.isError).toBe(true);
      expect(sample.result.content[0].text).toMatch(/stateful MCP session/);
    });

    it("stateless with responseMode 'sse' streams progress and closes the per-request server", async () => {
      const rt = await createRuntime(
        resolveConfig({ ...baseConfig, mcp: { auth: { authType: 'none' }, sessionMode: 'stateless', responseMode: 'sse' } }),
        { storage: new MemoryStorage() },
      );
      cleanups.push(() => rt.close());
      const stateless = await handlerServer({}, rt, mode);
      const s = await openWireSession(stateless.url);
      const r = await s.post(call(1, 'wait', { ms: 20, tag: 'x' }, { progressToken: 7 }));
      expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
      const msgs = messagesOf(await readSse(r));
      expect(msgs.map((m) => m.method ?? m.id)).toEqual(['notifications/progress', 1]);
    });
  });
});
