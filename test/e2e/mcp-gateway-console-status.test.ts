/**
 * What the console's MCP view reads about the gateway's upstreams (gateway.serverStatus, an
 * administrator procedure): per server its type, health (connected, or the error and when it
 * retries), exposure, who may use it (allowScopes, allowUsers, perUser and how its users bring
 * credentials) and its tools as clients see them after the server's allow/deny rules, with the
 * upstream's descriptions as they came (hostile markup included; the console renders text) but cut.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './helpers/mcpUpstreams.js';
import { JWT_SECRET, rpcCall, tokenFor, waitFor } from './helpers/aiGateway.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

const HOSTILE = fileURLToPath(new URL('./helpers/hostileMcpUpstream.mjs', import.meta.url));
/** An upstream whose first start fails (exit 3) and whose next one never answers: its reconnect stays in progress. */
const FLAPPING =
  "const fs = require('node:fs'); if (!fs.existsSync(process.argv[1])) { fs.writeFileSync(process.argv[1], '1'); process.exit(3); } setInterval(() => {}, 1000);";
const dir = mkdtempSync(path.join(tmpdir(), 'gateway-status-'));
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    jwt: { secret: JWT_SECRET },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      hostile: { command: process.execPath, args: [HOSTILE], tools: { deny: ['hidden'] }, allowScopes: ['ops'] },
      everything: { command: process.execPath, args: [EVERYTHING, 'stdio'], expose: 'search', tools: { allow: ['echo', 'get-sum'] } },
      broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
      flapping: { command: process.execPath, args: ['-e', FLAPPING, path.join(dir, 'started-once')], timeoutMs: 60_000 },
      remote: { type: 'http', url: 'http://127.0.0.1:9/mcp', perUser: true, oauth: {}, allowUsers: ['alice@example.com'] },
      keyed: { type: 'sse', url: 'http://127.0.0.1:9/sse', perUser: true, enabled: false },
    },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitFor(
    () => {
      const st = rt.gateway.status();
      return (
        ['hostile', 'everything'].every((n) => st.find((s) => s.name === n)?.state === 'ready') &&
        st.find((s) => s.name === 'broken')?.state === 'failed'
      );
    },
    { timeoutMs: 30_000, what: 'the stdio upstreams connected and the broken one failed' },
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Status = {
  name: string;
  type: string;
  enabled: boolean;
  state: string;
  error?: string;
  retryAt?: string;
  expose: string;
  access: { allowScopes: string[] | null; allowUsers: string[] | null; credentials: string | null };
  toolList: Array<{ name: string; description: string }>;
};

describe('gateway.serverStatus for the console', () => {
  it('lists every server with health, exposure, who may use it and its tools as clients see them', async () => {
    // The broken server tries again after a backoff (250 ms doubling): read a status from between two attempts.
    const by = await statusWhen((st) => st.broken?.state === 'failed');
    expect(Object.keys(by).sort()).toEqual(['broken', 'everything', 'flapping', 'hostile', 'keyed', 'remote']);

    expect(by.hostile).toMatchObject({ type: 'stdio', enabled: true, state: 'ready', expose: 'tools' });
    expect(by.hostile!.access).toEqual({ allowScopes: ['ops'], allowUsers: null, credentials: null });
    // The server's deny rule applies; names are as clients see them; the hostile text comes as it was, long text is cut.
    expect(by.hostile!.toolList.map((t) => t.name).sort()).toEqual(['hostile__long', 'hostile__poisoned']);
    expect(by.hostile!.toolList.find((t) => t.name === 'hostile__poisoned')!.description).toContain('<img src=x onerror=');
    expect(by.hostile!.toolList.find((t) => t.name === 'hostile__long')!.description.length).toBe(500);

    expect(by.everything).toMatchObject({ expose: 'search', state: 'ready' });
    expect(by.everything!.toolList.map((t) => t.name).sort()).toEqual(['everything__echo', 'everything__get-sum']);
    expect(by.everything!.access).toEqual({ allowScopes: null, allowUsers: null, credentials: null });

    expect(by.broken!.state).toBe('failed');
    expect(by.broken!.error).toBeTruthy();
    expect(Date.parse(by.broken!.retryAt!)).toBeGreaterThan(0);

    expect(by.remote).toMatchObject({ type: 'http', enabled: true, toolList: [] });
    expect(by.remote!.access).toEqual({ allowScopes: null, allowUsers: ['alice@example.com'], credentials: 'oauth' });
    expect(by.keyed).toMatchObject({ type: 'sse', enabled: false });
    expect(by.keyed!.access.credentials).toBe('headers');
  });

  it('keeps showing the last error while a failed server reconnects', async () => {
    const by = await statusWhen((st) => st.flapping?.state === 'connecting' && st.flapping.error !== undefined);
    expect(by.flapping!.error).toMatch(/exit|closed|unavailable/i);
    expect(by.flapping!.retryAt).toBeUndefined();
  });

  it('is refused to anyone but an administrator', async () => {
    const r = await rpcCall(server.url, await tokenFor('someone'), 'gateway.serverStatus');
    expect(r.error, r.text).toBeDefined();
    expect(r.error?.data?.code).toBe('FORBIDDEN');
  });
});

/** gateway.serverStatus by server name, read until `ready` holds of it (a server's health moves on its own). */
async function statusWhen(ready: (by: Record<string, Status>) => boolean): Promise<Record<string, Status>> {
  const admin = await tokenFor('root', { admin: true });
  return waitFor(
    async () => {
      const r = await rpcCall<{ servers: Status[] }>(server.url, admin, 'gateway.serverStatus');
      if (!r.result) throw new Error(r.text);
      const by = Object.fromEntries(r.result.servers.map((s) => [s.name, s]));
      return ready(by) ? by : undefined;
    },
    { timeoutMs: 30_000, what: 'gateway.serverStatus in the expected state' },
  );
}
