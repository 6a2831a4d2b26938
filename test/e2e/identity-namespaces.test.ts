/**
 * authType 'both': a shared-secret JWT subject and an identity-provider subject with the same
 * text (`user-77`) are two different users. Real server, real oidc-provider, the MCP SDK client
 * for the OAuth user, fetch for the JWT user; nothing is mocked.
 */
import { protectedProcedure, router } from '@ai-backend/core';
import { mintDevToken } from '@ai-backend/auth';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const SECRET = 'identity-namespaces-secret-0123456789abcdef';
const KEY = 'sk-jwt-user-77-SECRET-0001';

const whoami = router({
  whoami: protectedProcedure
    .meta({ description: 'Who is calling', mcp: {} })
    .query(({ ctx }) => ({ sub: ctx.identity.sub, via: ctx.identity.via })),
});

let idp: TestIdp;
let server: AiBackendServer;
let base: string;
let client: Client;
let transport: StreamableHTTPClientTransport;
let oauthToken: string;
let jwtToken: string;

async function rpc(token: string, method: string, params: unknown) {
  const res = await fetch(`${base}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: any; error?: { message: string; data?: Record<string, unknown> } };
}

beforeAll(async () => {
  idp = await startIdp();
  server = createServer({
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'silent' } },
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'both' } },
    customRouters: { e2e: whoami },
    oauth: {
      encryptionKey: 'identity-namespaces-encryption-key-0123',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
    },
  });
  base = (await server.start()).url;
  idp.configure(`${base}/oauth/callback`);

  const provider = new MemoryOAuthProvider('http://127.0.0.1:8977/callback');
  transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  client = new Client({ name: 'namespaces-e2e', version: '1.0.0' });
  await client.connect(transport);
  await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
  const { redirect } = await completeSignIn(provider.authorizationUrl!.href, 'user-77');
  await transport.finishAuth(redirect.searchParams.get('code')!);
  oauthToken = provider.saved!.access_token;
  jwtToken = await mintDevToken({ secret: SECRET, sub: 'user-77', scopes: ['mcp'] });
});
afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await idp?.close();
});

describe("authType 'both': identities qualified by issuer", () => {
  it('the JWT user-77 and the identity provider user-77 have different stored ids', async () => {
    const viaMcp = await client.callTool({ name: 'whoami', arguments: {} });
    expect(viaMcp.structuredContent ?? JSON.parse((viaMcp.content as Array<{ text: string }>)[0]!.text)).toMatchObject({
      sub: `idp:${idp.issuer}#user-77`,
      via: 'oauth',
    });
    expect((await rpc(jwtToken, 'e2e.whoami', {})).result).toEqual({ sub: 'user-77', via: 'jwt' });
  });

  it("one does not see the other's stored key", async () => {
    expect((await rpc(jwtToken, 'auth.storeUserKey', { email: 'user-77', provider: 'openai', apiKey: KEY })).result).toMatchObject({
      success: true,
    });
    expect((await rpc(jwtToken, 'auth.getUserProviders', { email: 'user-77' })).result).toEqual({ providers: ['openai'] });
    // The IdP user naming 'user-77' (the bare subject) is naming someone else: refused.
    expect((await rpc(oauthToken, 'auth.getUserProviders', { email: 'user-77' })).error?.data).toMatchObject({ code: 'FORBIDDEN' });
    expect((await rpc(oauthToken, 'auth.getUserProviders', { email: `idp:${idp.issuer}#user-77` })).result).toEqual({ providers: [] });
  });

  it("one cannot use the other's MCP session", async () => {
    const sessionId = transport.sessionId!;
    expect(sessionId).toBeTruthy();
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${jwtToken}`,
        'mcp-session-id': sessionId,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
    });
    expect(res.status).toBe(404);
  });
});
