/**
 * Who owns an anonymous MCP task (Tasks extension, 2026-07-28): the holder of its id, a 256-bit
 * handle, and not the client address. Before, an anonymous task belonged to the address it was
 * started from, so behind a proxy without trustProxy (one address for everyone) every anonymous
 * client owned every anonymous task. Signed-in callers' tasks stay theirs alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mintDevToken } from '@ai-backend/auth';
import { publicProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { startIn } from './helpers/testServer.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';

const SECRET = 'tasks-anonymous-e2e-secret-0123456789abcdef';
const TASKS = 'io.modelcontextprotocol/tasks';

/** A long-running tool that waits until it is cancelled (or 30 s). */
const waitRouter = router({
  wait: publicProcedure
    .meta({ description: 'Waits', longRunning: true, mcp: { public: true } })
    .input(z.object({ ms: z.number().int().max(30_000).default(30_000) }))
    .mutation(
      ({ ctx, input }) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve('done'), input.ms);
          ctx.req.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve('cancelled');
          });
        }),
    ),
});

let server: { url: string; stop(): Promise<void> };
beforeAll(async () => {
  server = await startIn(
    'listening',
    createServer({
      port: 0,
      host: '127.0.0.1',
      storage: { type: 'memory' },
      // trustProxy: the test is several client addresses (X-Forwarded-For).
      trustProxy: true,
      jwt: { secret: SECRET },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      customRouters: { t: waitRouter },
    }),
  );
});
afterAll(async () => {
  await server?.stop();
});

const META = envelope2026('anon-tasks', { extensions: { [TASKS]: {} } });
let ids = 0;

/** One 2026-07-28 request from `addr` (and `token` when signed in). */
async function mcp(
  addr: string,
  method: string,
  params: Record<string, unknown>,
  token?: string,
): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const headers = { 'x-forwarded-for': addr, ...(token ? { authorization: `Bearer ${token}` } : {}) };
  return modernReply(await fetch(`${server.url}/mcp`, modernPost(++ids, method, params, META, headers)));
}

async function startTask(addr: string, token?: string): Promise<string> {
  const r = await mcp(addr, 'tools/call', { name: 'wait', arguments: { ms: 30_000 } }, token);
  expect(r.result?.resultType, JSON.stringify(r)).toBe('task');
  return (r.result.task?.taskId ?? r.result.taskId) as string;
}

const UNKNOWN = { code: -32602 };

describe('anonymous MCP tasks belong to the holder of their id, not to the client address', () => {
  it('an anonymous task id is a 256-bit handle, not a UUID', async () => {
    const taskId = await startTask('10.9.0.1');
    expect(taskId).toMatch(/^anon-[A-Za-z0-9_-]{43}$/);
    expect((await mcp('10.9.0.1', 'tasks/cancel', { taskId })).error).toBeUndefined();
  });

  it('the handle is what owns it: the same client from another address still reaches it', async () => {
    const taskId = await startTask('10.9.0.2');
    const got = await mcp('10.9.0.3', 'tasks/get', { taskId });
    expect(got.result?.status, JSON.stringify(got)).toBe('working');
    expect((await mcp('10.9.0.3', 'tasks/cancel', { taskId })).error).toBeUndefined();
    expect((await mcp('10.9.0.2', 'tasks/get', { taskId })).result?.status).toBe('cancelled');
  });

  it('another client at the same address without the handle reaches nothing: a near id, the id without its prefix, a UUID', async () => {
    const taskId = await startTask('10.9.0.4');
    const near = taskId.slice(0, -1) + (taskId.endsWith('A') ? 'B' : 'A');
    for (const guess of [near, taskId.slice('anon-'.length), crypto.randomUUID()]) {
      expect((await mcp('10.9.0.4', 'tasks/get', { taskId: guess })).error, guess).toMatchObject(UNKNOWN);
    }
    await mcp('10.9.0.4', 'tasks/cancel', { taskId });
  });

  it('signed-in and anonymous tasks never cross, even from one address', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'tasks-user', scopes: ['mcp'] });
    const anon = await startTask('10.9.0.5');
    const mine = await startTask('10.9.0.5', token);
    expect(mine).not.toMatch(/^anon-/);
    expect((await mcp('10.9.0.5', 'tasks/get', { taskId: anon }, token)).error).toMatchObject(UNKNOWN);
    expect((await mcp('10.9.0.5', 'tasks/get', { taskId: mine })).error).toMatchObject(UNKNOWN);
    expect((await mcp('10.9.0.6', 'tasks/get', { taskId: mine }, token)).result?.status).toBe('working');
    await mcp('10.9.0.5', 'tasks/cancel', { taskId: anon });
    await mcp('10.9.0.5', 'tasks/cancel', { taskId: mine }, token);
  });
});
