import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { upstreamRequest } from '../ai/upstreamFetch.js';
import { postToolCall, type HttpSession } from './postToolCall.js';

const servers: http.Server[] = [];
afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

/**
 * A real upstream on 127.0.0.1 that answers the tools/call POST with `answer(id)` (a Response,
 * its body streamed out as it comes) and records every other POST body and each request's headers.
 */
async function upstream(answer: (id: string) => Response) {
  const posted: Array<Record<string, unknown>> = [];
  const headers: Array<http.IncomingHttpHeaders> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      headers.push(req.headers);
      if (body.method !== 'tools/call') {
        posted.push(body);
        res.writeHead(202).end();
        return;
      }
      const a = answer(body.id as string);
      res.writeHead(a.status, Object.fromEntries(a.headers));
      if (!a.body) return void res.end();
      Readable.fromWeb(a.body as never).pipe(res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const session: HttpSession = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    headers: { 'x-team': 't1' },
    sessionId: 's-1',
    protocolVersion: '2025-11-25',
    request: upstreamRequest,
  };
  return { session, posted, headers };
}

/** An SSE response whose bytes arrive in pieces of `size` (events cut anywhere). */
function sse(text: string, size = 7): Response {
  const bytes = new TextEncoder().encode(text);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size));
      c.close();
    },
  });
  return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
}

const event = (message: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', ...(message as object) })}\r\n\r\n`;
const opts = { timeoutMs: 5000, maxBytes: 10_000 };

describe('postToolCall', () => {
  it("reads an SSE answer cut anywhere: progress for this call only, then the result; the session's headers are sent", async () => {
    const u = await upstream((id) =>
      sse(
        'id: prime\r\ndata: \r\n\r\n' +
          event({ method: 'notifications/progress', params: { progressToken: 'other', progress: 9 } }) +
          event({ method: 'notifications/progress', params: { progressToken: id, progress: 1, total: 2, message: 'half' } }) +
          event({ id, result: { content: [{ type: 'text', text: 'done' }] } }),
      ),
    );
    const seen: unknown[] = [];
    const r = await postToolCall(u.session, 'echo', { a: 1 }, { ...opts, onProgress: (...p) => void seen.push(p) });
    expect(r).toEqual({ content: [{ type: 'text', text: 'done' }] });
    expect(seen).toEqual([[1, 2, 'half']]);
    expect(u.headers[0]).toMatchObject({ 'x-team': 't1', 'mcp-session-id': 's-1', 'mcp-protocol-version': '2025-11-25' });
  });

  it("a JSON answer with the upstream's error is thrown with its code; a result of the wrong shape is refused", async () => {
    const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
    const failing = await upstream((id) => json({ jsonrpc: '2.0', id, error: { code: -32602, message: 'bad arguments' } }));
    await expect(postToolCall(failing.session, 'echo', {}, opts)).rejects.toMatchObject({ code: -32602, message: 'bad arguments' });
    const garbage = await upstream((id) => json({ jsonrpc: '2.0', id, result: { content: 'not a list' } }));
    await expect(postToolCall(garbage.session, 'echo', {}, opts)).rejects.toMatchObject({
      message: /no content array/,
      data: { reason: 'upstream_invalid_result' },
    });
    const nothing = await upstream((id) => json({ jsonrpc: '2.0', id, result: null }));
    await expect(postToolCall(nothing.session, 'echo', {}, opts)).rejects.toMatchObject({
      message: 'its result is null, not an object',
      data: { reason: 'upstream_invalid_result' },
    });
  });

  it('an HTTP error keeps its status (a lost session is 404); an answer past maxBytes is PAYLOAD_TOO_LARGE', async () => {
    const gone = await upstream(() => new Response('session not found', { status: 404 }));
    await expect(postToolCall(gone.session, 'echo', {}, opts)).rejects.toMatchObject({ status: 404 });
    const huge = await upstream((id) => sse(event({ id, result: { content: [{ type: 'text', text: 'x'.repeat(100_000) }] } }), 4096));
    await expect(postToolCall(huge.session, 'echo', {}, opts)).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
  });

  it('a request the upstream asks during the call goes to onRequest and its answer is posted back; without one it is refused saying why', async () => {
    const asking = (id: string) =>
      sse(
        event({ id: 'srv-1', method: 'sampling/createMessage', params: { maxTokens: 5 } }) +
          event({ id, result: { content: [{ type: 'text', text: 'ok' }] } }),
      );
    const answered = await upstream(asking);
    await postToolCall(
      answered.session,
      'ask',
      {},
      { ...opts, onRequest: async (method, params) => ({ method, asked: params.maxTokens }) },
    );
    await expect
      .poll(() => answered.posted)
      .toEqual([{ jsonrpc: '2.0', id: 'srv-1', result: { method: 'sampling/createMessage', asked: 5 } }]);

    const refused = await upstream(asking);
    await postToolCall(refused.session, 'ask', {}, opts);
    await expect
      .poll(() => (refused.posted[0]?.error as { message?: string } | undefined)?.message)
      .toMatch(/cannot forward sampling\/createMessage: the tool was called through \/rpc or \/trpc/);
  });

  it('roots/list (or any request but sampling and elicitation) is answered here and never reaches onRequest', async () => {
    const asked: string[] = [];
    for (const method of ['roots/list', 'tools/call', 'resources/read']) {
      const asking = await upstream((id) =>
        sse(event({ id: 'srv-2', method, params: {} }) + event({ id, result: { content: [{ type: 'text', text: 'ok' }] } })),
      );
      await postToolCall(
        asking.session,
        'ask',
        {},
        { ...opts, onRequest: async (m) => (asked.push(m), { roots: [{ uri: 'file:///x' }] }) },
      );
      await expect.poll(() => asking.posted[0]).toMatchObject({ id: 'srv-2', error: { code: -32601 } });
      expect(JSON.stringify(asking.posted)).not.toContain('file:///x');
    }
    expect(asked).toEqual([]);
  });

  it('a call past timeoutMs fails as a timeout and the upstream is told to stop', async () => {
    const hanging = await upstream(
      () => new Response(new ReadableStream({ start() {} }), { headers: { 'content-type': 'text/event-stream' } }),
    );
    // The upstream never ends the stream: the abort of the body's read is what ends the call.
    await expect(postToolCall(hanging.session, 'slow', {}, { ...opts, timeoutMs: 50 })).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT' });
    await expect.poll(() => hanging.posted[0]).toMatchObject({ method: 'notifications/cancelled', params: { reason: 'timeout' } });
  });
});
