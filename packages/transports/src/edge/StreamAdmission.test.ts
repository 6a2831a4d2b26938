import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type HttpBindings, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { waitFor } from '@ai-backend/test-utils';
import {
  closeAfterRefusal,
  defaultStreamTotal,
  isRefusal,
  refusalResponse,
  StreamAdmission,
  streamTotalFor,
  type StreamPlace,
} from './StreamAdmission.js';

let server: ServerType | undefined;
afterEach(async () => {
  (server as { closeAllConnections?: () => void } | undefined)?.closeAllConnections?.();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

const place = (p: ReturnType<StreamAdmission['take']>): StreamPlace => {
  if (isRefusal(p)) throw new Error(`refused: ${p.message}`);
  return p;
};

describe('StreamAdmission', () => {
  it('caps per address (429), per identity across addresses (429) and per server (503), and a given-back place is free again', () => {
    const a = new StreamAdmission({ perAddress: 2, perIdentity: 3, total: 6 });
    const p1 = place(a.take('10.0.0.1'));
    place(a.take('10.0.0.1'));
    expect(a.take('10.0.0.1')).toMatchObject({ status: 429, cap: 'address', limit: 2, retryAfterSec: 5 });
    // One identity from three addresses: its own cap.
    place(a.take('10.0.0.2', 'alice'));
    place(a.take('10.0.0.3', 'alice'));
    place(a.take('10.0.0.4', 'alice'));
    expect(a.take('10.0.0.5', 'alice')).toMatchObject({ status: 429, cap: 'identity', limit: 3 });
    expect(a.open).toBe(5);
    place(a.take('10.0.0.8'));
    expect(a.take('10.0.0.9')).toMatchObject({ status: 503, cap: 'server', limit: 6 });
    p1();
    p1(); // idempotent: a second call gives back nothing more
    expect(a.open).toBe(5);
    place(a.take('10.0.0.1'));
    expect(a.take('10.0.0.1')).toMatchObject({ status: 503, cap: 'server' });
  });

  it('refuses a bad cap at construction', () => {
    expect(() => new StreamAdmission({ perAddress: 0, perIdentity: 1, total: 1 })).toThrow(TypeError);
  });

  it('answers a refusal as a JSON-RPC error with Retry-After', async () => {
    const r = new StreamAdmission({ perAddress: 1, perIdentity: 1, total: 1 });
    place(r.take('x'));
    const refused = r.take('y');
    if (!isRefusal(refused)) throw new Error('expected a refusal');
    const res = refusalResponse('jsonrpc', refused);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32053, message: expect.stringContaining('limit 1') },
    });
  });

  it('holds a place until a Node response closes; a non-stream answer gives it back at once', async () => {
    const admission = new StreamAdmission({ perAddress: 1, perIdentity: 1, total: 10 });
    const app = new Hono<{ Bindings: HttpBindings }>();
    app.get('/:kind', (c) => {
      const p = admission.take('one-client');
      if (isRefusal(p)) return refusalResponse('plain', p);
      const res =
        c.req.param('kind') === 'sse'
          ? new Response(new ReadableStream({ start: (ctl) => ctl.enqueue(new TextEncoder().encode(': open\n\n')) }), {
              headers: { 'content-type': 'text/event-stream' },
            })
          : Response.json({ ok: true });
      return admission.hold(res, p, c.env.outgoing);
    });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (let i = 0; i < 3; i++) expect((await fetch(url + '/json')).status).toBe(200);
    const ac = new AbortController();
    const open = await fetch(url + '/sse', { signal: ac.signal });
    await open.body!.getReader().read();
    const refused = await fetch(url + '/sse');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    ac.abort();
    await waitFor(() => admission.open === 0, { timeoutMs: 5000, intervalMs: 20, what: 'the place given back after the client closed' });
    expect((await fetch(url + '/json')).status).toBe(200);
  });

  it('a refusal closes its connection once written (HTTP/1.1), an admitted answer keeps it alive', async () => {
    const admission = new StreamAdmission({ perAddress: 1, perIdentity: 1, total: 10 });
    const app = new Hono<{ Bindings: HttpBindings }>();
    let held: StreamPlace | undefined;
    app.get('/', (c) => {
      const p = admission.take('one-client');
      if (isRefusal(p)) {
        closeAfterRefusal(c.env.outgoing);
        return refusalResponse('plain', p);
      }
      held = p;
      return Response.json({ ok: true });
    });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const port = (server.address() as AddressInfo).port;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; connection: string | undefined; socketClosed: Promise<void> }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          const socketClosed = new Promise<void>((done) => res.socket.once('close', () => done()));
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, socketClosed }));
        });
        req.on('error', reject);
      });
    try {
      const admitted = await get();
      expect(admitted).toMatchObject({ status: 200, connection: 'keep-alive' });
      const refused = await get();
      expect(refused).toMatchObject({ status: 429, connection: 'close' });
      await refused.socketClosed;
    } finally {
      held?.();
      agent.destroy();
    }
    // Without a Node response (in-process fetch) or its keep-alive flag (HTTP/2), nothing to do.
    expect(() => closeAfterRefusal(undefined)).not.toThrow();
    const h2Like = { once: () => undefined };
    closeAfterRefusal(h2Like);
    expect(h2Like).not.toHaveProperty('shouldKeepAlive');
  });

  it('in process (no Node response), holds until the body ends or is cancelled', async () => {
    const admission = new StreamAdmission({ perAddress: 5, perIdentity: 5, total: 5 });
    const sse = () =>
      new Response(new ReadableStream({ start: (ctl) => (ctl.enqueue(new TextEncoder().encode('data: 1\n\n')), ctl.close()) }), {
        headers: { 'content-type': 'text/event-stream' },
      });
    const read = admission.hold(sse(), place(admission.take('a')));
    const cancelled = admission.hold(
      new Response(new ReadableStream(), { headers: { 'content-type': 'text/event-stream' } }),
      place(admission.take('a')),
    );
    expect(admission.open).toBe(2);
    expect(await read.text()).toBe('data: 1\n\n');
    await cancelled.body!.cancel();
    expect(admission.open).toBe(0);
  });

  it('the default server cap is a third of the descriptor limit (an AI stream holds two), within 32..4096', () => {
    expect(streamTotalFor(256)).toBe(85);
    expect(streamTotalFor(1024)).toBe(341);
    expect(streamTotalFor(60)).toBe(32);
    expect(streamTotalFor(1_048_576)).toBe(4096);
    expect(streamTotalFor(undefined)).toBe(1024);
    const total = defaultStreamTotal();
    expect(total).toBeGreaterThanOrEqual(32);
    expect(total).toBeLessThanOrEqual(4096);
  });

  it('a held stream whose credential is lost is cut: its place comes back and the watch stops (the in-process body)', async () => {
    const admission = new StreamAdmission({ perAddress: 2, perIdentity: 2, total: 4 });
    const place = admission.take('10.0.0.9', 'someone');
    if (isRefusal(place)) throw new Error('refused');
    let lose: (() => void) | undefined;
    let stopped = 0;
    const by = {
      watchCredential(onLost: () => void) {
        lose = onLost;
        return () => stopped++;
      },
    };
    const endless = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => undefined) });
    const res = admission.hold(
      new Response(endless, { headers: { 'content-type': 'text/event-stream' } }),
      place,
      undefined,
      'event-stream',
      by,
    );
    const reading = res.body!.getReader().read();
    expect(admission.open).toBe(1);
    lose!();
    await expect(reading).rejects.toThrow(/credential/);
    expect(admission.open).toBe(0);
    expect(stopped).toBe(1);
  });
});
