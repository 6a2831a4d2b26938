/**
 * Who owns an anonymous MCP task (Tasks extension, 2026-07-28): the holder of its id, a 256-bit
 * handle, and not the client address. Before, an anonymous task belonged to the address it was
 * started from, so behind a proxy without trustProxy (one address for everyone) every anonymous
 * client owned every anonymous task. Signed-in callers' tasks stay theirs alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { startWaitTaskServer, type WaitTaskServer } from './helpers/waitTaskServer.js';

const SECRET = 'tasks-anonymous-e2e-secret-0123456789abcdef';

let server: WaitTaskServer;
beforeAll(async () => {
  // Anyone may call `wait`, each test client at an address of its own (X-Forwarded-For).
  server = await startWaitTaskServer(SECRET, 'anon-tasks', 'anyone-behind-proxy');
});
afterAll(async () => {
  await server?.stop();
});

/** One 2026-07-28 request from `addr` (and `token` when signed in). */
const mcp = (addr: string, method: string, params: Record<string, unknown>, token?: string) =>
  server.mcp(token, method, params, { 'x-forwarded-for': addr });
/** A task of the tool that waits until it is cancelled (or 30 s), started from `addr`. */
const startTask = (addr: string, token?: string) => server.startTask(token, { ms: 30_000 }, { 'x-forwarded-for': addr });

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
