import { afterEach, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { waitFor } from '@ai-backend/test-utils';
import { sseStreamCap } from './sseStreamCap.js';

let server: ServerType | undefined;
afterEach(async () => {
  (server as { closeAllConnections?: () => void } | undefined)?.closeAllConnections?.();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/**
 * A real Node server (the cap counts on the Node adapter, where a stream's end is the response's
 * 'close'): GET /mcp holds an event stream open until the client leaves; GET /json answers at once.
 * Every request is one client address, so the cap applies across them.
 */
async function start(max: number): Promise<string> {
  const app = new Hono();
  app.use('*', sseStreamCap(max, () => 'one-client'));
  app.get('/mcp', () => new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(': open\n\n')) }), { headers: { 'content-type': 'text/event-stream' } }));
  app.get('/json', (c) => c.json({ ok: true }));
  app.post('/mcp', (c) => c.json({ ok: true }));
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Open an event stream and read its first bytes, so it is surely established. */
async function openStream(url: string): Promise<{ status: number; close: () => void }> {
  const ac = new AbortController();
  const res = await fetch(url + '/mcp', { signal: ac.signal });
  if (res.status === 200) await res.body!.getReader().read();
  return { status: res.status, close: () => ac.abort() };
}

describe('sseStreamCap', () => {
  it('refuses the stream past the cap with 429, Retry-After and a JSON-RPC error; a closed stream frees its place', async () => {
    const url = await start(2);
    const a = await openStream(url);
    const b = await openStream(url);
    expect([a.status, b.status]).toEqual([200, 200]);
    const refused = await fetch(url + '/mcp');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as any).error.message).toBe('too many open event streams from this address (limit 2); close one before opening another');
    a.close();
    // The server sees the close a moment later: wait for the place to come free.
    const c = await waitFor(async () => {
      const s = await openStream(url);
      if (s.status !== 200) return undefined;
      return s;
    }, { timeoutMs: 5000, intervalMs: 50, what: 'a place after closing a stream' });
    c.close();
    b.close();
  });

  it('does not count answers that are not streams, nor POSTs', async () => {
    const url = await start(1);
    for (let i = 0; i < 5; i++) expect((await fetch(url + '/json')).status).toBe(200);
    const s = await openStream(url);
    expect(s.status).toBe(200);
    expect((await fetch(url + '/mcp', { method: 'POST' })).status).toBe(200);
    s.close();
  });

  it('does nothing in process (no Node response to watch)', async () => {
    const app = new Hono();
    app.use('*', sseStreamCap(0, () => 'x'));
    app.get('/mcp', (c) => c.text('ok'));
    expect((await app.request('/mcp')).status).toBe(200);
  });
});
