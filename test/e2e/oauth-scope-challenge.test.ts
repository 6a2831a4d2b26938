/**
 * MCP 2026-07-28 authorization, end to end with the official MCP SDK client against
 * createServer and panva's oidc-provider (all on 127.0.0.1): scope challenges in
 * WWW-Authenticate (401 with the scopes to request, 403 insufficient_scope naming the scope a
 * call needs, and the client's step-up), and the issuer in the authorization response (RFC 9207).
 */
import { protectedProcedure, router, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const CLIENT_REDIRECT = 'http://127.0.0.1:8977/callback';

const whoami = router({
  whoami: protectedProcedure
    .meta({ description: 'Who is calling', mcp: {} })
    .query(({ ctx }) => ({ sub: ctx.identity.sub, scopes: ctx.identity.scopes })),
});

/**
 * A client without refresh tokens: the 1.x SDK answers a 403 by refreshing when it holds a
 * refresh token, and a refresh can never widen a grant, so step-up needs a new authorization.
 */
class NoRefreshProvider extends MemoryOAuthProvider {
  override get clientMetadata(): OAuthClientMetadata {
    return { ...super.clientMetadata, grant_types: ['authorization_code'] };
  }
}

let idp: TestIdp;
let server: AiBackendServer;
let base = '';

function mcpPost(token: string | null, method: string, params: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

beforeAll(async () => {
  idp = await startIdp();
  const config: ConfigInput = {
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' }, sessionMode: 'stateless' },
    customRouters: { e2e: whoami },
    oauth: {
      encryptionKey: 'scope-challenge-encryption-key-0123456789',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
    },
  };
  server = createServer(config);
  base = (await server.start()).url.replace(/\/$/, '');
  idp.configure(`${base}/oauth/callback`);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await idp?.close();
});

describe('scope challenges and issuer checks (MCP 2026-07-28 authorization)', () => {
  it('a 401 names the scopes to request; the protected resource metadata lists them', async () => {
    const res = await mcpPost(null, 'tools/call', { name: 'whoami', arguments: {} });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect(challenge).toContain('scope="mcp mcp:call"');
    const prm = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as { scopes_supported: string[] };
    expect(prm.scopes_supported).toEqual(['mcp', 'mcp:call']);
  });

  it('a token without the call scope lists but cannot call: 403 insufficient_scope; the SDK steps up and then calls', async () => {
    const provider = new NoRefreshProvider(CLIENT_REDIRECT);
    const serverUrl = new URL(`${base}/mcp`);
    // A client that asks for less than it needs (least privilege gone too far): scope "mcp" only.
    expect(await auth(provider, { serverUrl, scope: 'mcp' })).toBe('REDIRECT');
    expect(provider.authorizationUrl!.searchParams.get('scope')).toBe('mcp');
    const first = await completeSignIn(provider.authorizationUrl!.href, 'alice');
    // RFC 9207: the authorization response names our issuer, exactly as the metadata does.
    const meta = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
      authorization_response_iss_parameter_supported: boolean;
    };
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
    expect(first.redirect.searchParams.get('iss')).toBe(meta.issuer);
    expect(await auth(provider, { serverUrl, authorizationCode: first.redirect.searchParams.get('code')! })).toBe('AUTHORIZED');
    const narrow = provider.saved!;
    expect(narrow.scope).toBe('mcp');
    expect(narrow.refresh_token).toBeUndefined();

    // Listing needs only a valid token; calling needs mcp:call.
    expect((await mcpPost(narrow.access_token, 'tools/list')).status).toBe(200);
    const refused = await mcpPost(narrow.access_token, 'tools/call', { name: 'whoami', arguments: {} });
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp:call"');
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);

    // The official client reads the challenge and starts a new authorization for the scope.
    const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
    const client = new Client({ name: 'scope-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      provider.authorizationUrl = undefined;
      await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
      expect(provider.authorizationUrl!.searchParams.get('scope')).toContain('mcp:call');
      const second = await completeSignIn(provider.authorizationUrl!.href, 'alice');
      expect(second.consentHtml).toContain('mcp:call');
      await transport.finishAuth(second.redirect.searchParams.get('code')!);
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect(result.isError ?? false).toBe(false);
      const me = (result.structuredContent ?? JSON.parse((result.content as Array<{ text: string }>)[0]!.text)) as { scopes: string[] };
      expect(me.scopes).toContain('mcp:call');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('authorization errors carry iss too, and resource indicators accept an uppercase host', async () => {
    const reg = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'iss check',
        redirect_uris: [CLIENT_REDIRECT],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      }),
    });
    expect(reg.status).toBe(201);
    const registered = (await reg.json()) as { client_id: string; application_type?: string };
    expect(registered.application_type).toBe('native');
    const authorize = new URL(`${base}/oauth/authorize`);
    const params = {
      response_type: 'code',
      client_id: registered.client_id,
      redirect_uri: CLIENT_REDIRECT,
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'plain',
      state: 's1',
    };
    for (const [k, v] of Object.entries(params)) authorize.searchParams.set(k, v);
    const refused = await fetch(authorize, { redirect: 'manual' });
    const back = new URL(refused.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('iss')).toBe(base);
    expect(back.searchParams.get('state')).toBe('s1');

    authorize.searchParams.set('code_challenge_method', 'S256');
    authorize.searchParams.set('resource', `${base.replace('http://127.0.0.1', 'HTTP://127.0.0.1')}/mcp`);
    expect((await fetch(authorize, { redirect: 'manual' })).status).toBe(200);
    authorize.searchParams.set('resource', `${base}/other`);
    const wrong = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location')!);
    expect(wrong.searchParams.get('error')).toBe('invalid_target');
  });
});
