import { createConnection, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';

/**
 * `limits.maxConnections` on a listening server: idle connections (a flood, or clients that keep
 * sockets open) take no more than it; one past it is closed before a byte is read, and the server
 * answers again as soon as a connection ends.
 */
describe('limits.maxConnections', () => {
  it('closes connections past the limit and serves again when one ends', async () => {
    const logs: string[] = [];
    const server = createServer(
      { port: 0, host: '127.0.0.1', storage: { type: 'memory' }, limits: { maxConnections: 3 } },
      { logger: createLogger('warn', (line) => logs.push(line)) },
    );
    const { url } = await server.start();
    const { port } = new URL(url);
    const open = () =>
      new Promise<Socket>((resolve, reject) => {
        const s = createConnection({ port: Number(port), host: '127.0.0.1' }, () => resolve(s));
        s.once('error', reject);
      });
    const idle: Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) idle.push(await open());
      const refused = await fetch(`${url}/health`).then(
        (r) => r.status,
        (err: Error) => err.name,
      );
      expect(refused).toBe('TypeError'); // fetch failed: the connection was closed unanswered
      expect(logs.some((l) => /limits\.maxConnections/.test(l))).toBe(true);
      const first = idle.shift()!;
      first.destroy();
      // The server counts the connection gone once its own side has closed, a little after ours:
      // until then a new one is still dropped, so the request is retried (vi.waitFor), not slept for.
      const back = await vi.waitFor(() => fetch(`${url}/health`), { timeout: 10_000, interval: 50 });
      expect(back.status).toBe(200);
      await back.text();
    } finally {
      for (const s of idle) s.destroy();
      await server.stop();
    }
  });
});
