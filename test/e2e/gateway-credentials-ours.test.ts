import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, protectedProcedure, router, type Runtime, runtimeOfServices } from '@ai-backend/core/internal';
import { mintDevToken } from '@ai-backend/auth';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, startIdp, type TestIdp } from './oauthHelpers.js';

/**
 * The gateway's OAuth client against a second instance of ai-backend as the upstream: its /mcp
 * is the protected MCP server and its own OAuth 2.1 server (our consent page, dynamic
 * registration, PKCE, resource indicators; oidc-provider behind it as the identity provider)
 * issues the tokens. Our two halves interoperate: gateway.connect → our consent → provider
 * sign-in → the gateway's callback → resolve → a real MCP client calls a tool on the upstream.
 */
const JWT_SECRET = 'e2e-gateway-ours-jwt-secret-0123456789abcdef';
const VAULT_KEY = 'e2e-gateway-ours-vault-master-key-0123456789';

const whoami = router({
  whoami: protectedProcedure
    .meta({ description: 'Who is calling', mcp: {} })
    .query(({ ctx }) => ({ sub: ctx.identity.sub, clientId: ctx.identity.clientId ?? null })),
});

let idp: TestIdp;
let upstream: AiBackendServer;
let gateway: AiBackendServer;
let upstreamBase = '';
let gatewayBase = '';
let runtime: Runtime;
const logs: string[] = [];

beforeAll(async () => {
  idp = await startIdp();
  upstream = createServer({
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' } },
    customRouters: { e2e: whoami },
    oauth: {
      encryptionKey: 'e2e-gateway-ours-upstream-encryption-key-01',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
    },
  });
  upstreamBase = (await upstream.start()).url.replace(/\/$/, '');
  idp.configure(`${upstreamBase}/oauth/callback`);
  gateway = createServer(
    {
      host: '127.0.0.1',
      port: 0,
      storage: { type: 'memory' },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
      jwt: { secret: JWT_SECRET },
      billing: { vaultKey: VAULT_KEY },
      mcpServers: { ours: { type: 'http', url: `${upstreamBase}/mcp`, perUser: true, allowPrivateNetwork: true } },
    },
    { logger: createLogger('debug', (l) => logs.push(l)) },
  );
  gatewayBase = (await gateway.start()).url.replace(/\/$/, '');
  runtime = runtimeOfServices(await gateway.ready());
}, 30_000);

afterAll(async () => {
  await Promise.all([gateway?.stop(), upstream?.stop()]);
  await idp?.close();
});

it('connect → our consent page → provider sign-in → callback → the upstream accepts the token resolve gives', async () => {
  const token = await mintDevToken({ secret: JWT_SECRET, sub: 'gina', scopes: ['mcp'] });
  const res = await fetch(`${gatewayBase}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'gateway.connect', params: { server: 'ours' } }),
  });
  const body = (await res.json()) as { result?: { authorizationUrl: string }; error?: unknown };
  expect(body.error).toBeUndefined();
  const auth = new URL(body.result!.authorizationUrl);
  expect(auth.origin).toBe(upstreamBase);
  expect(auth.searchParams.get('resource')).toBe(`${upstreamBase}/mcp`);

  const { redirect } = await completeSignIn(auth.href, 'gina-upstream');
  expect(redirect.href.startsWith(`${gatewayBase}/gateway/oauth/callback?`)).toBe(true);
  const page = await fetch(redirect);
  expect(await page.text()).toContain('Connected to ours');

  const r = await runtime.upstreamCredentials.resolve({ server: { name: 'ours', url: `${upstreamBase}/mcp` }, userId: 'gina' });
  expect(r.kind).toBe('headers');
  const client = new Client({ name: 'creds-ours-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${upstreamBase}/mcp`), {
      requestInit: { headers: (r as { headers: Record<string, string> }).headers },
    }),
  );
  try {
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.isError ?? false).toBe(false);
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    // The upstream sees its own sign-in of the provider's user, through the client we registered there.
    expect(JSON.parse(text).sub).toBe(`idp:${idp.issuer}#gina-upstream`);
  } finally {
    await client.close();
  }
  const bearer = (r as { headers: Record<string, string> }).headers.authorization!.slice(7);
  expect(logs.join('\n')).not.toContain(bearer);
}, 30_000);
