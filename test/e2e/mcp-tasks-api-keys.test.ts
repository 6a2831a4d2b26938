/**
 * An MCP task (Tasks extension, 2026-07-28) belongs to the credential that started it: a task one
 * of a user's API keys started is not another of that user's keys' business, nor the user's own
 * sign-in's, and the reverse (least privilege: a key narrowed to some tools must not read the
 * results of what a wider credential ran). Before, tasks belonged to the key owner's subject,
 * so every key of one user could read and cancel every other's tasks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mintDevToken } from '@ai-backend/auth';
import { protectedProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { startIn } from './helpers/testServer.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';
import { rpcCall } from './helpers/aiGateway.js';

const SECRET = 'tasks-api-keys-e2e-secret-0123456789abcdef';
const TASKS = 'io.modelcontextprotocol/tasks';

/** A long-running tool that waits until it is cancelled (or `ms`). */
const waitRouter = router({
  wait: protectedProcedure
    .meta({ description: 'Waits', longRunning: true, mcp: {} })
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
let user: string;
let keyA: string;
let keyB: string;
beforeAll(async () => {
  server = await startIn(
    'listening',
    createServer({
      port: 0,
      host: '127.0.0.1',
      storage: { type: 'memory' },
      jwt: { secret: SECRET },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      customRouters: { t: waitRouter },
    }),
  );
  user = await mintDevToken({ secret: SECRET, sub: 'tasks-key-owner', expiresIn: '1h' });
  const made = async (name: string) => {
    const r = await rpcCall<{ key: string }>(server.url, user, 'keys.create', { name });
    if (!r.result) throw new Error(JSON.stringify(r.error));
    return r.result.key;
  };
  keyA = await made('app-a');
  keyB = await made('app-b');
});
afterAll(async () => {
  await server?.stop();
});

const META = envelope2026('key-tasks', { extensions: { [TASKS]: {} } });
let ids = 0;

async function mcp(token: string, method: string, params: Record<string, unknown>) {
  const headers = { authorization: `Bearer ${token}` };
  return modernReply(await fetch(`${server.url}/mcp`, modernPost(++ids, method, params, META, headers)));
}

async function startTask(token: string): Promise<string> {
  const r = await mcp(token, 'tools/call', { name: 'wait', arguments: { ms: 30_000 } });
  expect(r.result?.resultType, JSON.stringify(r)).toBe('task');
  return (r.result.task?.taskId ?? r.result.taskId) as string;
}

const UNKNOWN = { code: -32602 };

describe('MCP tasks belong to the credential that started them', () => {
  it("a task an API key started is unknown to the owner's other key and to the owner's sign-in; the key itself reads and cancels it", async () => {
    const taskId = await startTask(keyA);
    for (const other of [keyB, user]) {
      expect((await mcp(other, 'tasks/get', { taskId })).error).toMatchObject(UNKNOWN);
      expect((await mcp(other, 'tasks/cancel', { taskId })).error).toMatchObject(UNKNOWN);
    }
    const mine = await mcp(keyA, 'tasks/get', { taskId });
    expect(mine.result?.status, JSON.stringify(mine)).toBe('working');
    expect((await mcp(keyA, 'tasks/cancel', { taskId })).error).toBeUndefined();
    expect((await mcp(keyA, 'tasks/get', { taskId })).result?.status).toBe('cancelled');
  });

  it("a task the owner's sign-in started is unknown to the owner's API keys", async () => {
    const taskId = await startTask(user);
    for (const key of [keyA, keyB]) {
      expect((await mcp(key, 'tasks/get', { taskId })).error).toMatchObject(UNKNOWN);
      expect((await mcp(key, 'tasks/cancel', { taskId })).error).toMatchObject(UNKNOWN);
    }
    expect((await mcp(user, 'tasks/get', { taskId })).result?.status).toBe('working');
    expect((await mcp(user, 'tasks/cancel', { taskId })).error).toBeUndefined();
  });
});
