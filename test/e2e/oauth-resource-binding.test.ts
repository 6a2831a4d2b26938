/**
 * Audience binding of our access tokens (RFC 8707, MCP authorization "Token Handling"): a token
 * is accepted only by the resource it was issued for, the /mcp URL the client signed in for.
 * The same server reached under another name (another Host, another forwarded host behind a
 * trusted proxy) is another resource, and refuses it with a 401 that starts a new sign-in there.
 * The token comes from a real sign-in: the MCP SDK client, our consent page, oidc-provider.
 */
import { request } from 'node:http';
import { protectedProcedure, router, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const whoami = router({
  whoami: protectedProcedure.meta({ description: 'Who is calling', mcp: {} }).query(({ ctx }) => ({ sub: ctx.identity.sub })),
});

let idp: TestIdp;
let server: AiBackendServer;
let client: Client;
let base: string;
let token: string;

beforeAll(async () => {
  idp = await startIdp();
  server = createServer({
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    // Forwarded headers count: the proxy's public name is the resource clients see.
    trustProxy: true,
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' } },
    customRouters: { e2e: whoami },
    oauth: {
      encryptionKey: 'e2e-encryption-key-0123456789-abcdef',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
    },
  });
  base = (await server.start()).url;
  idp.configure(`${base}/oauth/callback`);
  const provider = new MemoryOAuthProvider('http://127.0.0.1:8976/callback');
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  client = new Client({ name: 'resource-binding-e2e', version: '1.0.0' });
  await client.connect(transport);
  await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
  const { redirect } = await completeSignIn(provider.authorizationUrl!.href, 'alice');
  await transport.finishAuth(redirect.searchParams.get('code')!);
  token = provider.saved!.access_token;
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await idp?.close();
});

/** An MCP initialize with the token, over node:http: fetch does not let a request set its own Host. */
function initialize(headers: Record<string, string>): Promise<{ status: number; challenge: string }> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const req = request(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body),
        ...headers,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, challenge: String(res.headers['www-authenticate'] ?? '') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The protected-resource metadata as a client reaching the server under those headers reads it. */
function resourceOf(headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    request(`${base}/.well-known/oauth-protected-resource/mcp`, { headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(JSON.parse(text).resource));
    })
      .on('error', reject)
      .end();
  });
}

describe('a token is accepted only by the resource it was issued for', () => {
  it('the SDK client calls the tool with it at the /mcp URL it signed in for', async () => {
    const decoded = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    expect(decoded.aud).toBe(`${base}/mcp`);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.isError ?? false).toBe(false);
    expect((await initialize({})).status).toBe(200);
  });

  const port = (): string => new URL(base).port;
  const variants: Array<[string, () => Record<string, string>, () => string]> = [
    ['another Host', () => ({ host: `localhost:${port()}` }), () => `http://localhost:${port()}`],
    [
      'another forwarded host and scheme',
      () => ({ 'x-forwarded-host': 'mcp.other.example', 'x-forwarded-proto': 'https' }),
      () => 'https://mcp.other.example',
    ],
  ];
  it.each(variants)('is refused at %s with a 401 that points at that resource', async (_name, headers, otherBase) => {
    const { status, challenge } = await initialize(headers());
    expect(status).toBe(401);
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain('error_description="audience mismatch"');
    expect(challenge).toContain(`resource_metadata="${otherBase()}/.well-known/oauth-protected-resource/mcp"`);
    // That resource's metadata names itself, so the client signs in again there.
    expect(await resourceOf(headers())).toBe(`${otherBase()}/mcp`);
  });

  it('on every entry point: /rpc refuses it too', async () => {
    const call = (headers: Record<string, string>) =>
      fetch(`${base}/rpc`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'e2e.whoami', params: {} }),
      }).then((r) => r.json());
    expect((await call({})).result).toEqual({ sub: `idp:${idp.issuer}#alice` });
    const refused = await call({ 'x-forwarded-host': 'mcp.other.example' });
    expect(refused.error).toMatchObject({ code: -32001, message: 'audience mismatch' });
  });
});

describe('with a public URL under a path (a proxy serving us at https://gw.example/base)', () => {
  const publicUrl = 'https://gw.example/base';
  // Made when a test runs: the provider's issuer is known only then.
  const configs: Record<string, () => ConfigInput> = {
    'our authorization server': () => ({
      mcp: { auth: { authType: 'oauth' } },
      oauth: {
        encryptionKey: 'e2e-encryption-key-0123456789-abcdef',
        providerClientId: IDP_CLIENT_ID,
        provider: { issuer: idp.issuer },
        publicUrl,
      },
    }),
    'shared-secret JWTs': () => ({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: 's'.repeat(40) }, oauth: { publicUrl } }),
  };
  it.each(Object.keys(configs))('%s: the 401 names the metadata at the host root (RFC 9728 §3.1), served there', async (name) => {
    const extra = configs[name]!();
    const other = createServer({
      host: '127.0.0.1',
      port: 0,
      storage: { type: 'memory' },
      monitoring: { logging: { level: 'silent' } },
      customRouters: { e2e: whoami },
      ...extra,
    });
    try {
      const url = (await other.start()).url;
      const res = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
      });
      expect(res.status).toBe(401);
      const metadataUrl = 'https://gw.example/.well-known/oauth-protected-resource/base/mcp';
      expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`);
      // The proxy passes the host's /.well-known/ on to us unchanged.
      const prm = await fetch(`${url}${new URL(metadataUrl).pathname}`);
      expect(prm.status).toBe(200);
      expect((await prm.json()).resource).toBe('https://gw.example/base/mcp');
      expect((await (await fetch(`${url}/.well-known/oauth-protected-resource`)).json()).resource).toBe('https://gw.example/base/mcp');
    } finally {
      await other.stop();
    }
  });
});
