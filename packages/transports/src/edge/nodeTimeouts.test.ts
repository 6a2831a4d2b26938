import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { enforceBodyIdleTimeout } from './nodeTimeouts.js';

const IDLE_MS = 200;
let server: Server | undefined;

async function stop(): Promise<void> {
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = undefined;
}
afterEach(stop);

/** A server that waits `readAfterMs` before it reads the body (a route loading its modules, a busy loop), then echoes it. */
async function start(readAfterMs: number): Promise<number> {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    setTimeout(async () => {
      let body = '';
      try {
        for await (const chunk of req) body += chunk;
      } catch {
        return; // the connection was closed under the read: what the stalled-body case expects
      }
      res.end(`got ${body}`);
    }, readAfterMs);
  });
  enforceBodyIdleTimeout(server, IDLE_MS);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Raw HTTP/1.1 exchange: what the server answered before the socket closed, and when it closed. */
function exchange(port: number, head: string, parts: Array<{ afterMs: number; data: string }>): Promise<{ answer: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head);
      for (const p of parts) setTimeout(() => socket.writable && socket.write(p.data), p.afterMs);
    });
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      answer += d;
      if (answer.includes('got ')) socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ answer, ms: performance.now() - t0 }));
  });
}

const HEAD = (length: number) => `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe('enforceBodyIdleTimeout', () => {
  it('answers a complete body the server reads only after more than the idle time', async () => {
    const port = await start(IDLE_MS * 3);
    const { answer } = await exchange(port, `${HEAD(7)}{"a":1}`, []);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('got {"a":1}');
  });

  it('answers a body that arrives in pauses shorter than the idle time', async () => {
    const port = await start(0);
    const { answer } = await exchange(port, HEAD(7), [
      { afterMs: IDLE_MS / 2, data: '{"a"' },
      { afterMs: IDLE_MS, data: ':1}' },
    ]);
    expect(answer).toContain('got {"a":1}');
  });

  it('closes the connection of a body that stalls longer than the idle time, read at once or late', async () => {
    for (const readAfterMs of [0, IDLE_MS * 3]) {
      const port = await start(readAfterMs);
      const { answer, ms } = await exchange(port, HEAD(100), [{ afterMs: 10, data: '{"a":' }]);
      expect(answer).toBe('');
      expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 20);
      expect(ms).toBeLessThan(IDLE_MS * 3 + 2000);
      await stop();
    }
  });
});
