import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainHeaders, sendRequest } from './httpRequest.js';

// A real server on 127.0.0.1 that answers the first request on each connection and closes the
// connection, unanswered, when a second one arrives on it: what a peer whose keep-alive timeout
// ran out does to the request we sent on the socket it was closing.
let server: http.Server;
let url: URL;
const perSocket = new WeakMap<object, number>();
let answered = 0;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    req.resume();
    req.on('end', () => {
      if (n > 1) {
        req.socket.destroy();
        return;
      }
      answered++;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
});
afterAll(() => new Promise((r) => server.close(r)));

async function text(res: http.IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of res) s += c;
  return s;
}

describe('sendRequest', () => {
  it('sends a request that died on a socket the peer closed once more, on a new socket', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await sendRequest(url, { method: 'POST', headers: {}, body: 'a' }, agent);
      expect(await text(first)).toBe('ok');
      // The second goes out on the kept-alive socket, which the server closes unanswered.
      const second = await sendRequest(url, { method: 'POST', headers: {}, body: 'b' }, agent);
      expect(await text(second)).toBe('ok');
      expect(answered).toBe(2);
    } finally {
      agent.destroy();
    }
  });

  it('does not send again when the socket was new: the error is the caller’s', async () => {
    const agent = new http.Agent({ keepAlive: false });
    const refused = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((r) => refused.listen(0, '127.0.0.1', r));
    let seen = 0;
    refused.on('request', () => seen++);
    try {
      const target = new URL(`http://127.0.0.1:${(refused.address() as AddressInfo).port}/`);
      await expect(sendRequest(target, { method: 'POST', headers: {}, body: 'x' }, agent)).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(seen).toBe(1);
    } finally {
      agent.destroy();
      await new Promise((r) => refused.close(r));
    }
  });
});

describe('plainHeaders', () => {
  it('reads a record, a Headers object and header pairs alike', () => {
    expect(plainHeaders({ 'content-type': 'application/json', authorization: 'Bearer x' })).toEqual({
      'content-type': 'application/json',
      authorization: 'Bearer x',
    });
    expect(plainHeaders(new Headers({ 'X-Trace': '1' }))).toEqual({ 'x-trace': '1' });
    expect(
      plainHeaders([
        ['X-A', 'a'],
        ['x-b', 'b'],
      ]),
    ).toEqual({ 'x-a': 'a', 'x-b': 'b' });
  });

  it('drops headers left undefined (as fetch does) and takes no headers as none', () => {
    expect(plainHeaders({ a: '1', b: undefined } as unknown as HeadersInit)).toEqual({ a: '1' });
    expect(plainHeaders(undefined)).toEqual({});
  });
});
