/**
 * An MCP task (Tasks extension, 2026-07-28) runs for as long as its tool does, after the request
 * that started it has been answered. Access is checked when used, and a task's run is used for as
 * long as it runs: like an open stream, it ends when the credential that started it is refused
 * (an API key revoked, or expired, or a token past its expiry), the tool's signal aborted and the
 * task failed. Before, a revoked key's task ran on to its end, on the owner's account.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { mintDevToken } from '@ai-backend/auth';
import { protectedProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { startIn } from './helpers/testServer.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';
import { rpcCall } from './helpers/aiGateway.js';

const SECRET = 'task-credential-watch-secret-0123456789abc';
const TASKS = 'io.modelcontextprotocol/tasks';
/** Runs of `wait` whose signal was aborted, by their `tag`. */
const aborted = new Set<string>();

const waitRouter = router({
  wait: protectedProcedure
    .meta({ description: 'Waits', longRunning: true, mcp: {} })
    .input(z.object({ tag: z.string() }))
    .mutation(
      ({ ctx, input }) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve('done'), 60_000);
          ctx.req.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            aborted.add(input.tag);
            resolve('stopped');
          });
        }),
    ),
});

let server: { url: string; stop(): Promise<void> };
let owner: string;
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
  owner = await mintDevToken({ secret: SECRET, sub: 'task-watch-owner', expiresIn: '1h' });
});
afterAll(async () => {
  await server?.stop();
});

const META = envelope2026('task-watch', { extensions: { [TASKS]: {} } });
let ids = 0;
async function mcp(token: string, method: string, params: Record<string, unknown>) {
  return modernReply(await fetch(`${server.url}/mcp`, modernPost(++ids, method, params, META, { authorization: `Bearer ${token}` })));
}
async function startTask(token: string, tag: string): Promise<string> {
  const r = await mcp(token, 'tools/call', { name: 'wait', arguments: { tag } });
  expect(r.result?.resultType, JSON.stringify(r)).toBe('task');
  return (r.result.task?.taskId ?? r.result.taskId) as string;
}
async function newKey(): Promise<{ key: string; id: string }> {
  const r = await rpcCall<{ key: string; apiKey: { id: string } }>(server.url, owner, 'keys.create', { name: 'task-app' });
  if (!r.result) throw new Error(r.text);
  return { key: r.result.key, id: r.result.apiKey.id };
}

describe("a task's run ends with the credential that started it", () => {
  it('an API key revoked while its task runs: the run is aborted; other tasks run on', async () => {
    const revoked = await newKey();
    const kept = await newKey();
    await startTask(revoked.key, 'revoked');
    const keptTask = await startTask(kept.key, 'kept');
    await startTask(owner, 'owner');
    expect((await rpcCall(server.url, owner, 'keys.revoke', { id: revoked.id })).error).toBeUndefined();
    await vi.waitFor(() => expect(aborted.has('revoked')).toBe(true), { timeout: 10_000, interval: 50 });
    expect(aborted.has('kept')).toBe(false);
    expect(aborted.has('owner')).toBe(false);
    expect((await mcp(kept.key, 'tasks/get', { taskId: keptTask })).result?.status).toBe('working');
  });
});
