/**
 * An MCP task (Tasks extension, 2026-07-28) belongs to the credential that started it: a task one
 * of a user's API keys started is not another of that user's keys' business, nor the user's own
 * sign-in's, and the reverse (least privilege: a key narrowed to some tools must not read the
 * results of what a wider credential ran). Before, tasks belonged to the key owner's subject,
 * so every key of one user could read and cancel every other's tasks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { rpcCall } from './helpers/aiGateway.js';
import { startWaitTaskServer, type WaitTaskServer } from './helpers/waitTaskServer.js';

const SECRET = 'tasks-api-keys-e2e-secret-0123456789abcdef';

let server: WaitTaskServer;
let user: string;
let keyA: string;
let keyB: string;
beforeAll(async () => {
  server = await startWaitTaskServer(SECRET, 'key-tasks');
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

const mcp = (token: string, method: string, params: Record<string, unknown>) => server.mcp(token, method, params);
/** A task of the tool that waits until it is cancelled (or 30 s). */
const startTask = (token: string) => server.startTask(token, { ms: 30_000 });

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
