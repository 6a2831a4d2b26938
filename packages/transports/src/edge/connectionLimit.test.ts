import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { connectionLimitFor, limitConnections } from './connectionLimit.js';

const connect = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });
const connections = (server: Server) =>
  new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
const closed = (s: Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));

describe('limits.maxConnections', () => {
  it('defaults to half the open-file limit, within 64..32768, and 4096 where it is unknown', () => {
    expect(connectionLimitFor(1024)).toBe(512);
    expect(connectionLimitFor(65_536)).toBe(32_768);
    expect(connectionLimitFor(1_048_576)).toBe(32_768);
    expect(connectionLimitFor(100)).toBe(64);
    expect(connectionLimitFor(undefined)).toBe(4096);
  });

  it('closes connections past the limit as they arrive, says so once, and accepts again when one ends', async () => {
    const warnings: Array<{ msg: string; fields: Record<string, unknown> }> = [];
    const server: Server = createServer((s) => s.on('data', (d) => s.write(d)));
    limitConnections(server, 2, (msg, fields) => warnings.push({ msg, fields }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const held = [await connect(port), await connect(port)];
      const over = [await connect(port), await connect(port)];
      await Promise.all(over.map(closed));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toMatch(/limits\.maxConnections/);
      expect(warnings[0]!.fields).toMatchObject({ limit: 2, dropped: 1 });
      held[0]!.destroy();
      await closed(held[0]!);
      // The server counts the connection gone once its own side has closed, a little after ours.
      await vi.waitFor(() => expect(connections(server)).resolves.toBe(1));
      const again = await connect(port);
      const echoed = new Promise<string>((r) => again.once('data', (d) => r(d.toString())));
      again.write('ping');
      expect(await echoed).toBe('ping');
      again.destroy();
      held[1]!.destroy();
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
