import { describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { createStorage, publicProcedure, resolveConfig, router } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';

/** A procedure that takes a while, so a request is in flight when stop() is called. */
let waitStarted: () => void = () => undefined;
const slow = router({
  wait: publicProcedure.input(z.object({ ms: z.number().int().max(2000) })).mutation(async ({ input }) => {
    waitStarted();
    await new Promise((r) => setTimeout(r, input.ms)); // the procedure's work, not a test pause
    return { waited: input.ms };
  }),
});

describe('server lifecycle', () => {
  it('start() returns the bound address; stop() finishes in-flight requests, refuses new ones and closes the store', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-lifecycle-'));
    try {
      const server = createServer({
        port: 0,
        storage: { type: 'sqlite', dir },
        mcp: { auth: { authType: 'none' } },
        customRouters: { slow },
        monitoring: { logging: { level: 'silent' } },
      });
      const addr = await server.start();
      expect(addr.host).toBe('127.0.0.1');
      expect(addr.port).toBeGreaterThan(0);
      expect(addr.url).toBe(`http://127.0.0.1:${addr.port}`);

      const started = new Promise<void>((resolve) => (waitStarted = resolve));
      const inFlight = fetch(addr.url + '/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slow.wait', params: { ms: 400 } }),
      });
      await started; // the request is in flight
      const stopped = server.stop();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ result: { waited: 400 } });
      await stopped;

      await expect(fetch(addr.url + '/health')).rejects.toThrow();
      // The SQLite file's lock was released: another process (or server) may open it.
      const reopened = await createStorage(resolveConfig({ storage: { type: 'sqlite', dir } }).storage);
      await reopened.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an invalid config throws before anything starts', () => {
    expect(() => createServer({ port: -1 })).toThrow(/port/);
    expect(() => createServer({ customRouters: { mcp: slow } })).toThrow(/built-in namespace/);
  });

  it('a tool-name clash in customRouters fails start-up', async () => {
    const clash = router({ greeting: publicProcedure.meta({ mcp: {} }).query(() => 'x') });
    const server = createServer({ port: 0, storage: { type: 'memory' }, customRouters: { other: clash } });
    await expect(server.start()).rejects.toThrow(/MCP tool name "greeting"/);
    await server.stop();
  });
});
