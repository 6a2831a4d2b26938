/**
 * An MCP task (Tasks extension, 2026-07-28) runs for as long as its tool does, after the request
 * that started it has been answered. Access is checked when used, and a task's run is used for as
 * long as it runs: like an open stream, it ends when the credential that started it is refused
 * (an API key revoked, or expired, or a token past its expiry), the tool's signal aborted and the
 * task failed. Before, a revoked key's task ran on to its end, on the owner's account.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { rpcCall } from './helpers/aiGateway.js';
import { startWaitTaskServer, type WaitTaskServer } from './helpers/waitTaskServer.js';

const SECRET = 'task-credential-watch-secret-0123456789abc';

let server: WaitTaskServer;
let owner: string;
beforeAll(async () => {
  server = await startWaitTaskServer(SECRET, 'task-watch');
  owner = await mintDevToken({ secret: SECRET, sub: 'task-watch-owner', expiresIn: '1h' });
});
afterAll(async () => {
  await server?.stop();
});

const mcp = (token: string, method: string, params: Record<string, unknown>) => server.mcp(token, method, params);
const startTask = (token: string, tag: string) => server.startTask(token, { tag });
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
    await vi.waitFor(() => expect(server.aborted.has('revoked')).toBe(true), { timeout: 10_000, interval: 50 });
    expect(server.aborted.has('kept')).toBe(false);
    expect(server.aborted.has('owner')).toBe(false);
    expect((await mcp(kept.key, 'tasks/get', { taskId: keptTask })).result?.status).toBe('working');
  });
});
