/**
 * A user's per-user connection replaced while a call runs on it (docs/mcp-gateway.md, "Failure
 * behaviour"): new credentials (stored headers, or a refreshed OAuth token) open a new connection
 * on the user's next call, and the old one was closed at once, ending its session at the
 * upstream under the call still running there. Now it is let go when its calls have ended: the
 * running call completes, the next ones use the new credentials.
 */
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startEverythingHttp } from './helpers/mcpUpstreams.js';

const JWT_SECRET = 'e2e-gateway-inflight-jwt-secret-0123456789abcdef';
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
let server: TestServer;

async function rpc(method: string, params: unknown) {
  const token = await mintDevToken({ secret: JWT_SECRET, sub: 'dana', email: 'dana@example.com', scopes: ['mcp'] });
  const res = await server.fetch('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { message: string } };
}

beforeAll(async () => {
  http = await startEverythingHttp();
  server = await startTestServer({
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    jwt: { secret: JWT_SECRET },
    billing: { vaultKey: 'e2e-gateway-inflight-vault-master-key-0123456789' },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { mine: { type: 'http', url: http.url, perUser: true, timeoutMs: 15_000 } },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await http?.stop();
});

const textOf = (r: { result?: { content?: Array<{ text?: string }> } }) => r.result?.content?.[0]?.text ?? JSON.stringify(r);

it("a call running on a user's connection completes when new credentials replace the connection", async () => {
  expect((await rpc('gateway.setCredentials', { server: 'mine', headers: { 'x-api-key': 'first-key-0123456789' } })).result).toBeDefined();
  const opened = http.sessions.opened;
  const running = rpc('gateway.callTool', { server: 'mine', tool: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } });
  // The call opened the user's connection (the upstream says so) and runs on it: awaited, not slept for.
  await vi.waitFor(() => expect(http.sessions.opened).toBeGreaterThan(opened), { timeout: 10_000 });
  expect((await rpc('gateway.setCredentials', { server: 'mine', headers: { 'x-api-key': 'second-key-0123456789' } })).result).toBeDefined();
  // The next call opens the user's new connection.
  expect(textOf(await rpc('gateway.callTool', { server: 'mine', tool: 'echo', arguments: { message: 'new' } }))).toBe('Echo: new');
  const done = await running;
  expect(done.result?.isError).toBeFalsy();
  expect(textOf(done)).toMatch(/completed/i);
}, 30_000);
