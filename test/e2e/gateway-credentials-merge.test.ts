/**
 * A perUser server's shared config headers and a user's stored headers (docs/mcp-gateway.md,
 * "How the gateway uses them": "the config's shared headers first, the user's over them"). Config
 * header names keep the case they were written in (`X-Api-Key`, `Authorization`), while stored
 * names are lower-cased: the user's header must replace the shared one of the same name, on every
 * request to the upstream (the SDK client's connect and lists, and the forwarded tools/call), never
 * travel beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { mintDevToken } from '@ai-backend/auth';
import { resolveConfig, runtimeOfServices } from '@ai-backend/core/internal';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startApiKeyMcp, type UpstreamMcp } from './helpers/oauthUpstream.js';

const JWT_SECRET = 'e2e-gateway-merge-jwt-secret-0123456789abcdef';
const KEYS = { team: 'ak-team-SHAREDHEADER-5b2e9f0c7d1a', carol: 'ak-carol-SECRETHEADER-8a3c6e1f9b20' };

let upstream: UpstreamMcp;
let server: TestServer;
const token = (sub: string) => mintDevToken({ secret: JWT_SECRET, sub, email: `${sub}@example.com`, scopes: ['mcp'] });

async function rpc(sub: string, method: string, params: unknown) {
  const res = await server.fetch('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await token(sub)}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { message: string } };
}

async function viaMcp(sub: string, tool: string): Promise<{ isError: boolean; text: string; listed: string[] }> {
  const client = new Client({ name: 'merge-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${await token(sub)}` } },
    }),
  );
  try {
    const listed = (await client.listTools()).tools.map((t) => t.name);
    const r = await client.callTool({ name: tool, arguments: {} });
    return { isError: r.isError === true, text: (r.content as Array<{ text: string }>)[0]!.text, listed };
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  upstream = await startApiKeyMcp({ [KEYS.team]: 'team', [KEYS.carol]: 'carol' });
  server = await startTestServer({
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    jwt: { secret: JWT_SECRET },
    billing: { vaultKey: 'e2e-gateway-merge-vault-master-key-0123456789' },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      // The team's key as the default, written as people write header names; each user may store their own.
      keyed: { type: 'http', url: upstream.url, perUser: true, headers: { 'X-Api-Key': KEYS.team } },
    },
  });
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await upstream?.close();
});

describe("perUser: the user's stored headers over the shared ones", () => {
  it('a stored x-api-key replaces the configured X-Api-Key: the upstream sees the user, on lists and calls', async () => {
    expect((await rpc('carol', 'gateway.setCredentials', { server: 'keyed', headers: { 'x-api-key': KEYS.carol } })).error).toBeUndefined();
    const r = await viaMcp('carol', 'keyed__whoami');
    expect(r.listed).toContain('keyed__whoami');
    expect(r).toMatchObject({ isError: false, text: 'key:carol' });
    expect(upstream.refused).toBe(0);
  });

  it("stored headers are not sent to another address after the server's URL changes (as an OAuth grant is not)", async () => {
    const elsewhere = await startApiKeyMcp({ [KEYS.carol]: 'carol-at-another-host' });
    try {
      const gateway = runtimeOfServices(await server.server.ready()).gateway;
      const at = (url: string) => resolveConfig({ mcpServers: { moving: { type: 'http', url, perUser: true } } }).mcpServers.moving!;
      await gateway.addServer('moving', at(upstream.url));
      expect(
        (await rpc('carol', 'gateway.setCredentials', { server: 'moving', headers: { 'x-api-key': KEYS.carol } })).error,
      ).toBeUndefined();
      expect(await viaMcp('carol', 'moving__whoami')).toMatchObject({ isError: false, text: 'key:carol' });

      // An administrator points the same name at another host: carol's key must not follow.
      await gateway.addServer('moving', at(elsewhere.url));
      const r = await viaMcp('carol', 'moving__whoami');
      expect(r.text).not.toBe('key:carol-at-another-host');
      expect(r).toMatchObject({ isError: true });
      expect(r.text).toMatch(/gateway\.setCredentials/);
      // Stored again for the new address, by the user who chose to: it works.
      expect(
        (await rpc('carol', 'gateway.setCredentials', { server: 'moving', headers: { 'x-api-key': KEYS.carol } })).error,
      ).toBeUndefined();
      expect(await viaMcp('carol', 'moving__whoami')).toMatchObject({ isError: false, text: 'key:carol-at-another-host' });
    } finally {
      await elsewhere.close();
    }
  });
});
