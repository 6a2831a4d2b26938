/**
 * Every upstream connection the gateway lets go ends its Streamable HTTP session at the upstream
 * (DELETE). server-everything, like many servers, keeps a session (its server, transport and
 * stored events) until its client DELETEs it: per-user connections evicted at
 * `gateway.maxUserConnections`, replaced by new credentials, every connection at a stop, and a
 * connection given up as lost while the upstream was still up used to stay open there for as
 * long as the upstream ran. Its own log counts what it opened and closed
 * (helpers/mcpUpstreams.ts).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { mintDevToken } from '@ai-backend/auth';
import { waitFor } from '@ai-backend/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startEverythingHttp } from './helpers/mcpUpstreams.js';

const JWT_SECRET = 'e2e-gateway-upstream-sessions-jwt-0123456789';
const USERS = 12;
/** Per-user connections held at most: the rest are closed as users come. */
const HELD = 2;

let upstream: Awaited<ReturnType<typeof startEverythingHttp>>;
let server: TestServer;
const cleanups: Array<() => Promise<void>> = [];

async function rpc(sub: string, method: string, params: unknown): Promise<{ result?: any; error?: { message: string } }> {
  const token = await mintDevToken({ secret: JWT_SECRET, sub, email: `${sub}@example.com`, scopes: ['mcp'] });
  const res = await server.fetch('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { message: string } };
}

async function echo(sub: string, message: string): Promise<void> {
  const r = await rpc(sub, 'gateway.callTool', { server: 'mine', tool: 'echo', arguments: { message } });
  expect(JSON.stringify(r.result)).toContain(`Echo: ${message}`);
}

beforeAll(async () => {
  upstream = await startEverythingHttp();
  server = await startTestServer({
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    jwt: { secret: JWT_SECRET },
    billing: { vaultKey: 'e2e-gateway-upstream-sessions-vault-0123456789' },
    gateway: { allowPrivateNetwork: true, maxUserConnections: HELD },
    mcpServers: {
      shared: { type: 'http', url: upstream.url },
      mine: { type: 'http', url: upstream.url, perUser: true },
    },
  });
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await upstream?.stop();
  for (const c of cleanups.reverse()) await c();
});

it('a per-user connection evicted, replaced by new credentials, or closed at a stop ends its upstream session', async () => {
  for (let i = 0; i < USERS; i++) {
    const sub = `user${i}`;
    expect(
      (await rpc(sub, 'gateway.setCredentials', { server: 'mine', headers: { 'x-api-key': `key-${i}-0123456789` } })).error,
    ).toBeUndefined();
    await echo(sub, `from ${sub}`);
  }
  // The shared connection and the last HELD users' ones are open; every other one was let go.
  const held = 1 + HELD;
  await waitFor(() => upstream.sessions.opened - upstream.sessions.closed === held, {
    timeoutMs: 5000,
    what: `upstream sessions open: ${JSON.stringify(upstream.sessions)}, expected ${held}`,
  });
  expect(upstream.sessions.opened).toBe(1 + USERS);

  // New credentials open a new connection; the old one's session ends.
  const last = `user${USERS - 1}`;
  expect(
    (await rpc(last, 'gateway.setCredentials', { server: 'mine', headers: { 'x-api-key': 'key-rotated-0123456789' } })).error,
  ).toBeUndefined();
  await echo(last, 'rotated');
  await waitFor(() => upstream.sessions.opened - upstream.sessions.closed === held, {
    timeoutMs: 5000,
    what: `upstream sessions open after new credentials: ${JSON.stringify(upstream.sessions)}`,
  });
  expect(upstream.sessions.opened).toBe(2 + USERS);

  // A stop ends them all, at the upstream too.
  await server.stop();
  expect(upstream.sessions).toEqual({ opened: 2 + USERS, closed: 2 + USERS });
}, 30_000);

/**
 * A TCP proxy to `port` that resets both sides of any connection whose bytes carry `marker`: a
 * call lost on a reset socket while the upstream, and the gateway's session there, stay up.
 */
async function resettingProxy(port: number, marker: string): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const proxy: Server = createServer((client) => {
    const target = connect(port, '127.0.0.1');
    for (const s of [client, target]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.once('close', () => sockets.delete(s));
    }
    client.on('data', (chunk: Buffer) => {
      if (!chunk.includes(marker)) return void target.write(chunk);
      client.resetAndDestroy();
      target.destroy();
    });
    target.pipe(client);
    client.once('close', () => target.destroy());
    target.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port: at } = proxy.address() as { port: number };
  return {
    url: `http://127.0.0.1:${at}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        proxy.close(() => resolve());
      }),
  };
}

describe('a connection given up as lost', () => {
  it('ends its old session when the upstream is still there', async () => {
    const up = await startEverythingHttp();
    cleanups.push(() => up.stop());
    const proxy = await resettingProxy(up.port, 'RESET-ME');
    cleanups.push(() => proxy.close());
    const gw = await startTestServer({
      mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } },
      gateway: { allowPrivateNetwork: true },
      mcpServers: { web: { type: 'http', url: proxy.url, timeoutMs: 5000 } },
    });
    cleanups.push(() => gw.stop());
    const call = async (message: string) => {
      const res = await gw.fetch('/rpc', rpcBody('gateway.callTool', { server: 'web', tool: 'echo', arguments: { message } }));
      return JSON.stringify(await res.json());
    };
    await waitFor(async () => (await call('first')).includes('Echo: first'), { timeoutMs: 20_000, what: 'the upstream answering' });
    expect(up.sessions).toEqual({ opened: 1, closed: 0 });

    // The socket under this call is reset: the connection counts as lost and a new session opens after the backoff.
    expect(await call('RESET-ME')).toMatch(/unreachable|failed/);
    await waitFor(async () => (await call('again')).includes('Echo: again'), { timeoutMs: 20_000, what: 'a new session answering' });
    expect(up.sessions.opened).toBe(2);
    // The old session, which the upstream still held, was ended: one is open, the new one.
    await waitFor(() => up.sessions.closed === 1, { timeoutMs: 5000, what: `the old session ended: ${JSON.stringify(up.sessions)}` });
  }, 60_000);
});

const rpcBody = (method: string, params: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
});
