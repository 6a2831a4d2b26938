import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { bodyLimit, withBufferedBody, type BodyLimitOptions } from './bodyLimit.js';
import { MAX_META_ENTRIES } from './superjsonMeta.js';

/** A route behind bodyLimit that echoes what the handler received. */
function app(o: Partial<BodyLimitOptions> = {}) {
  const a = new Hono();
  a.use('*', bodyLimit({ family: 'jsonrpc', limit: 100, idleMs: 1000, ...o }));
  a.all('*', async (c) =>
    c.json({ length: c.req.header('content-length') ?? null, te: c.req.header('transfer-encoding') ?? null, body: await c.req.text() }),
  );
  return a;
}

function stream(chunks: string[], pauseBeforeLastMs = 0): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream(
    {
      async pull(controller) {
        // A client that pauses mid-body (the idle rule's subject), not a test wait.
        if (i === chunks.length - 1 && pauseBeforeLastMs) await new Promise((r) => setTimeout(r, pauseBeforeLastMs));
        if (i < chunks.length) controller.enqueue(enc.encode(chunks[i++]!));
        else controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}
const postStream = (body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  ({ method: 'POST', body, headers, duplex: 'half' }) as RequestInit;

describe('bodyLimit', () => {
  it('refuses a declared Content-Length over the limit with 413 in the family shape, unread', async () => {
    const res = await app().request('/rpc', { method: 'POST', body: 'x'.repeat(101), headers: { 'content-length': '101' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request body exceeds 100 bytes' } });
  });

  it('passes a declared body within the limit untouched', async () => {
    const res = await app().request('/rpc', { method: 'POST', body: 'hello', headers: { 'content-length': '5' } });
    expect(await res.json()).toEqual({ length: '5', te: null, body: 'hello' });
  });

  it('reads a chunked body up to the limit and hands it on with its length', async () => {
    const res = await app().request('/rpc', postStream(stream(['ab', 'cd', 'ef'])));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ length: '6', te: null, body: 'abcdef' });
  });

  it('refuses a chunked body once it passes the limit (413), with no declared length to trust', async () => {
    const res = await app().request('/rpc', postStream(stream(['x'.repeat(60), 'x'.repeat(60), 'never read'])));
    expect(res.status).toBe(413);
  });

  it('answers 408 and closes the connection when a chunked body stalls longer than idleMs', async () => {
    const res = await app({ idleMs: 50 }).request('/rpc', postStream(stream(['{"a":', '1}'], 400)));
    expect(res.status).toBe(408);
    expect(res.headers.get('connection')).toBe('close');
    expect(((await res.json()) as any).error.message).toBe('request body stalled for more than 50 ms');
  });

  it('lets GET, HEAD and OPTIONS through without a body check', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) expect((await app().request('/rpc', { method })).status).toBe(200);
  });

  describe('tRPC routes (trpcDepth)', () => {
    const trpc = () => app({ family: 'trpc', trpcDepth: 5, limit: 100_000 });

    it('refuses a POST body nested deeper than trpcDepth even with a Content-Length', async () => {
      const body = JSON.stringify({ json: [[[[[[1]]]]]] });
      const res = await trpc().request('/trpc/x', { method: 'POST', body, headers: { 'content-length': String(body.length) } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.json).toMatchObject({
        message: 'JSON nesting deeper than 5',
        data: { code: 'BAD_REQUEST', httpStatus: 400 },
      });
    });

    it('refuses a GET input nested deeper than trpcDepth', async () => {
      const input = encodeURIComponent(JSON.stringify({ json: [[[[[[1]]]]]] }));
      const res = await trpc().request(`/trpc/x?input=${input}`);
      expect(res.status).toBe(400);
      const ok = await trpc().request(`/trpc/x?input=${encodeURIComponent(JSON.stringify({ json: [[1]] }))}`);
      expect(ok.status).toBe(200);
    });

    it('refuses superjson meta past its bounds or malformed, and passes a good one', async () => {
      const values: Record<string, [string]> = {};
      for (let i = 0; i <= MAX_META_ENTRIES; i++) values[`d${i}`] = ['Date'];
      const huge = JSON.stringify({ json: {}, meta: { values } });
      const r1 = await trpc().request('/trpc/x', { method: 'POST', body: huge });
      expect(r1.status).toBe(400);
      expect(((await r1.json()) as any).error.json.message).toBe(`input meta has more than ${MAX_META_ENTRIES} entries`);
      const r2 = await trpc().request('/trpc/x', {
        method: 'POST',
        body: JSON.stringify({ json: {}, meta: { values: { a: ['class'] } } }),
      });
      expect(((await r2.json()) as any).error.json.message).toBe('malformed input meta');
      const good = JSON.stringify({ json: { at: '2026-01-01T00:00:00.000Z' }, meta: { values: { at: ['Date'] } } });
      const r3 = await trpc().request('/trpc/x', { method: 'POST', body: good });
      expect(r3.status).toBe(200);
      expect(((await r3.json()) as any).body).toBe(good);
      // A `meta` key written with escapes is the same key to JSON.parse: checked all the same.
      const escaped = huge.replace('"meta"', '"\\u006deta"');
      expect(escaped).not.toContain('"meta"');
      const r4 = await trpc().request('/trpc/x', { method: 'POST', body: escaped });
      expect(r4.status).toBe(400);
      // A batch (?batch=1) with a stray top-level `json` is still read as the batch tRPC sees.
      const r5 = await trpc().request('/trpc/x?batch=1', { method: 'POST', body: `{"0":${huge},"json":null}` });
      expect(r5.status).toBe(400);
    });

    it('leaves malformed JSON to tRPC (it answers it itself)', async () => {
      const res = await trpc().request('/trpc/x', { method: 'POST', body: '{"meta": ' });
      expect(res.status).toBe(200);
    });
  });

  describe("tRPC routes over a socket (the Node adapter's direct read)", () => {
    async function listening(): Promise<{ url: string; close: () => void }> {
      const a = new Hono();
      a.use('*', bodyLimit({ family: 'trpc', trpcDepth: 5, limit: 1000, idleMs: 1000 }));
      // What the tRPC handler does: the text from Hono's body cache, and the request rebuilt for tRPC's adapter.
      a.all('*', async (c) => {
        const text = await c.req.text();
        const again = await (await withBufferedBody(c)).text();
        return c.json({ text, again });
      });
      return new Promise((resolve) => {
        const server = serve({ fetch: a.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) =>
          resolve({ url: `http://127.0.0.1:${info.port}`, close: () => server.close() }),
        );
      });
    }

    it('hands the declared body to the handler and to a rebuilt request, and still checks depth and size', async () => {
      const s = await listening();
      try {
        const body = JSON.stringify({ json: { message: 'héllo' } });
        const ok = await fetch(`${s.url}/trpc/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(await ok.json()).toEqual({ text: body, again: body });
        const deep = await fetch(`${s.url}/trpc/x`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ json: [[[[[[1]]]]]] }),
        });
        expect(deep.status).toBe(400);
        const big = await fetch(`${s.url}/trpc/x`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ json: 'x'.repeat(2000) }),
        });
        expect(big.status).toBe(413);
      } finally {
        s.close();
      }
    });
  });
});
