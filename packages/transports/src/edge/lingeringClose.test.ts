import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { lingerOnClose } from './lingeringClose.js';

const MIB = 1024 * 1024;
let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** A server that refuses every body unread and closes the connection, as an early 413 does. */
async function refusingServer(linger: boolean): Promise<number> {
  server = createServer((_req, res) => {
    res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
    res.end('too large');
  });
  if (linger) lingerOnClose(server, 3000);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/**
 * A client that keeps uploading and reads nothing for `starveMs` (a loaded machine that does not
 * schedule it), then reads. Resolves with what it read before its socket closed.
 */
function starvedUpload(port: number, starveMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const piece = Buffer.alloc(64 * 1024, 0x20);
    let answer = '';
    let stop = false;
    socket.pause();
    socket.on('error', () => undefined);
    socket.on('close', () => {
      stop = true;
      resolve(answer);
    });
    socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: ${50 * MIB}\r\n\r\n`);
    const pump = () => {
      // Paced so the client is still sending when the server closes its side.
      if (stop || socket.destroyed) return;
      socket.write(piece);
      setTimeout(pump, 5);
    };
    pump();
    setTimeout(() => {
      socket.setEncoding('utf8');
      socket.on('data', (d) => {
        answer += d;
        if (answer.includes('too large')) {
          stop = true;
          socket.destroy();
        }
      });
      socket.resume();
    }, starveMs);
  });
}

describe('lingerOnClose', () => {
  it('a client that reads late still gets the early answer: the server half-closes and drains', async () => {
    const port = await refusingServer(true);
    const answer = await starvedUpload(port, 800);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('too large');
  });

  it('without it the same client loses the answer to the reset (what the lingering close prevents)', async () => {
    const port = await refusingServer(false);
    const answer = await starvedUpload(port, 800);
    expect(answer).not.toContain('too large');
  });

  it('the socket is destroyed once the client closes, or after the linger time', async () => {
    const port = await refusingServer(true);
    const closed = new Promise<number>((resolve) => server!.once('connection', (s) => s.once('close', () => resolve(performance.now()))));
    // allowHalfOpen: this client does not close its side when the server closes its own.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    socket.on('error', () => undefined);
    socket.resume();
    socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n');
    // The client sends nothing more and never closes: the linger time (3 s here) bounds the socket.
    const t0 = performance.now();
    const ended = await new Promise<boolean>((r) => socket.once('end', () => r(true)));
    expect(ended).toBe(true); // the server's half-close reached the client
    const at = await closed;
    expect(at - t0).toBeGreaterThan(2500);
    socket.destroy();
  });

  it('a client that closes after reading the answer frees the socket at once', async () => {
    const port = await refusingServer(true);
    const closed = new Promise<number>((resolve) => server!.once('connection', (s) => s.once('close', () => resolve(performance.now()))));
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.setEncoding('utf8');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('end', () => socket.end());
    socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n');
    const t0 = performance.now();
    const at = await closed;
    expect(answer).toContain('too large');
    expect(at - t0).toBeLessThan(2000);
  });
});
