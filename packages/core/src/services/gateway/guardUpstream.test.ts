import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResolveAll, SocketLookup } from '../../net/guardedFetch.js';
import { pinnedFetch, pinnedRequest } from '../../net/guardedFetch.js';
import { guardedUpstream } from './guardUpstream.js';

/**
 * Remote upstreams are checked on the address each connection is made to, not on a resolution of
 * its own before it: a name that resolves to 127.0.0.1 never reaches the server listening there.
 */
let server: http.Server;
let port = 0;
const received: string[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    if (req.url === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-upstream': 'yes' });
      res.write('data: one\n\n');
      setImmediate(() => res.end('data: two\n\n'));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ got: Buffer.concat(chunks).toString('utf8'), auth: req.headers.authorization ?? null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const limits = { allowHttp: true, allowPrivateNetwork: false };

describe('the gateway SSRF guard at connect time', () => {
  it('a name resolving to 127.0.0.1 is refused at the connection, resolved once (no earlier check a rebinding could fool); the server gets nothing', async () => {
    let resolutions = 0;
    const resolve: ResolveAll = (host, cb) => {
      resolutions++;
      cb(null, host === 'rebind.example' ? [{ address: '127.0.0.1', family: 4 }] : []);
    };
    const guarded = guardedUpstream(limits, resolve)!;
    const before = received.length;
    await expect(guarded.fetch(`http://rebind.example:${port}/mcp`, { method: 'POST', body: '{}' })).rejects.toThrow(
      /rebind\.example resolves to a non-public address/,
    );
    expect(resolutions).toBe(1);
    // The forwarded tools/call's request (below fetch) is the same guard: refused at its connection, resolved there again.
    await expect(
      guarded.request(new URL(`http://rebind.example:${port}/mcp`), { method: 'POST', headers: {}, body: '{}' }),
    ).rejects.toThrow(/rebind\.example resolves to a non-public address/);
    expect(resolutions).toBe(2);
    await expect(guarded.request(new URL(`http://127.0.0.1:${port}/mcp`), { method: 'POST', headers: {} })).rejects.toThrow(
      /SSRF guard: non-public addresses/,
    );
    expect(received.length).toBe(before);
  });

  it('a kept-alive connection serves later requests without resolving again; a new connection is resolved and checked again (a rebinding then is refused)', async () => {
    // Public at first (the test lets its own test address pass as if it were public), then rebound to loopback.
    let answer = '127.0.0.1';
    let resolutions = 0;
    const lookup: SocketLookup = (host, opts, cb) => {
      resolutions++;
      if (host !== 'upstream.example' || answer !== '127.0.0.1') {
        return cb(Object.assign(new Error(`${host} resolves to a non-public address`), { code: 'ESSRFBLOCKED' }), []);
      }
      return opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4);
    };
    const request = pinnedRequest({ allowHttp: true, lookup });
    const url = new URL(`http://upstream.example:${port}/mcp`);
    const read = async (res: http.IncomingMessage) => {
      res.resume();
      await new Promise((r) => res.once('end', r));
      return res.statusCode;
    };
    expect(await read(await request(url, { method: 'POST', headers: {}, body: '{}' }))).toBe(201);
    expect(await read(await request(url, { method: 'POST', headers: {}, body: '{}' }))).toBe(201);
    expect(resolutions).toBe(1);
    // Two at once: the second needs a connection of its own, resolved now and refused.
    answer = '10.0.0.1';
    const both = await Promise.allSettled([
      request(url, { method: 'POST', headers: {}, body: '{}' }).then(read),
      request(url, { method: 'POST', headers: {}, body: '{}' }).then(read),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(resolutions).toBe(2);
  });

  it('localhost through the system resolver and an address literal are refused too; allowPrivateNetwork uses plain fetch', async () => {
    const guarded = guardedUpstream(limits)!.fetch;
    const before = received.length;
    await expect(guarded(`http://localhost:${port}/mcp`)).rejects.toThrow(/non-public address/);
    await expect(guarded(`http://127.0.0.1:${port}/mcp`)).rejects.toThrow(/SSRF guard: non-public addresses/);
    await expect(guardedUpstream({ allowHttp: false, allowPrivateNetwork: false })!.fetch(`http://example.com/mcp`)).rejects.toThrow(
      /only https/,
    );
    expect(received.length).toBe(before);
    expect(guardedUpstream({ allowHttp: true, allowPrivateNetwork: true })).toBeUndefined();
  });

  it('what passes the lookup is fetched like fetch would: request body and headers sent, status, repeated headers, a streamed body', async () => {
    // The adapter itself, with a lookup that lets this one name through to the test server.
    const lookup: SocketLookup = (host, opts, cb) => {
      if (host !== 'upstream.example') return cb(Object.assign(new Error('unknown'), { code: 'ENOTFOUND' }), []);
      return opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4);
    };
    const f = pinnedFetch({ allowHttp: true, lookup });
    const post = await f(`http://upstream.example:${port}/mcp`, {
      method: 'POST',
      headers: new Headers({ authorization: 'Bearer t', 'content-type': 'application/json' }),
      body: '{"x":1}',
    });
    expect(post.status).toBe(201);
    expect(post.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(await post.json()).toEqual({ got: '{"x":1}', auth: 'Bearer t' });
    const sse = await f(new Request(`http://upstream.example:${port}/sse`));
    expect(sse.headers.get('x-upstream')).toBe('yes');
    expect(await sse.text()).toBe('data: one\n\ndata: two\n\n');
    await expect(f(`http://elsewhere.example:${port}/`)).rejects.toThrow(/fetch failed/);
  });
});
