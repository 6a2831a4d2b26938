// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * OAuth end to end: the official MCP SDK client against createServer, with panva's
 * oidc-provider as the real identity provider, all on 127.0.0.1.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { protectedProcedure, router, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { waitFor } from '@ai-backend/test-utils';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const ENCRYPTION_KEY = 'e2e-encryption-key-0123456789-abcdef';
const CLIENT_REDIRECT = 'http://127.0.0.1:8976/callback';
const testRedisAt = await testRedis();

const whoami = router({
  whoami: protectedProcedure.meta({ description: 'Who is calling', mcp: {} }).query(({ ctx }) => ({
    sub: ctx.identity.sub,
    email: ctx.identity.email ?? null,
    via: ctx.identity.via,
    clientId: ctx.identity.clientId ?? null,
    scopes: ctx.identity.scopes,
  })),
});

let idp: TestIdp;
/** The IdP's subject qualified by its issuer, as every stored key sees it. */
const aliceId = () => `idp:${idp.issuer}#alice`;
const servers: AiBackendServer[] = [];
const clients: Client[] = [];

type OAuthInput = NonNullable<NonNullable<ConfigInput>['oauth']>;

function configFor(
  port: number,
  extra: Partial<OAuthInput> = {},
  storage: NonNullable<ConfigInput>['storage'] = { type: 'memory' },
): ConfigInput {
  return {
    host: '127.0.0.1',
    port,
    storage,
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' } },
    customRouters: { e2e: whoami },
    oauth: {
      encryptionKey: ENCRYPTION_KEY,
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
      ...extra,
    },
  };
}

async function start(config: ConfigInput): Promise<{ server: AiBackendServer; base: string }> {
  const server = createServer(config);
  servers.push(server);
  const { url } = await server.start();
  return { server, base: url };
}

async function connect(base: string, provider: MemoryOAuthProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function callWhoami(
  client: Client,
): Promise<{ sub: string; email: string | null; via: string; clientId: string | null; scopes: string[] }> {
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  expect(result.isError ?? false).toBe(false);
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  if (structured && 'sub' in structured) return structured as never;
  const text = (result.content as Array<{ type: string; text: string }>)[0]!.text;
  return JSON.parse(text);
}

/** The whole first sign-in as a real MCP client does it; returns a connected, authorized client. */
async function signInWithSdk(base: string, provider: MemoryOAuthProvider, login = 'alice') {
  const { client, transport } = await connect(base, provider);
  // The protected tool answers 401; the SDK discovers, registers and asks us to open the browser.
  await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const { redirect, consentHtml } = await completeSignIn(provider.authorizationUrl!.href, login);
  await transport.finishAuth(redirect.searchParams.get('code')!);
  return { client, transport, redirect, consentHtml };
}

async function rawToolCall(base: string, token: string): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  });
}

beforeAll(async () => {
  idp = await startIdp();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});
afterAll(() => idp.close());

/**
 * After a server stops, the client's keep-alive pool (undici, in this process) still lists the
 * sockets that server closed until it has read their FIN; a restart on the same address could
 * otherwise get a request written on one ("other side closed"). stop() resolves once every
 * server-side socket is closed, so the FINs are queued: two setImmediate turns put a whole poll
 * phase between here and the next request, in which the pool reads them and drops the sockets.
 */
async function poolSeesClosedSockets(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
}

/** Servers in one file share the IdP, whose client redirect URI is fixed: keep one port. */
let port = 0;
async function startServer(extra: Partial<OAuthInput> = {}, storage?: NonNullable<ConfigInput>['storage']) {
  const started = await start(configFor(port, extra, storage));
  if (port === 0) {
    port = Number(new URL(started.base).port);
    idp.configure(`${started.base}/oauth/callback`);
  }
  return started;
}

describe('OAuth with the MCP SDK client and a real OpenID provider', () => {
  it('401 → discovery → registration → PKCE → consent → provider login → code → protected tool', async () => {
    const { base } = await startServer();
    // Without a token, tools/call is refused with the challenge that starts discovery.
    const bare = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);

    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    const { client, redirect, consentHtml } = await signInWithSdk(base, provider);
    const authUrl = provider.authorizationUrl!;
    expect(authUrl.origin + authUrl.pathname).toBe(`${base}/oauth/authorize`);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(`${base}/mcp`);
    expect(provider.info?.client_id).toBeTruthy();
    expect(consentHtml).toContain('MCP SDK e2e client');
    expect(redirect.searchParams.get('state')).toBe(provider.lastState);
    expect(redirect.searchParams.get('iss')).toBe(base);

    const me = await callWhoami(client);
    expect(me).toMatchObject({ sub: aliceId(), email: 'alice@example.com', via: 'oauth', clientId: provider.info!.client_id });
    expect(me.scopes).toEqual(['mcp', 'mcp:call']);
    // Our own token, not the provider's: signed by us, for our /mcp.
    const claims = JSON.parse(Buffer.from(provider.saved!.access_token.split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ iss: base, aud: `${base}/mcp`, sub: aliceId() });
  });

  it('discovery answers any origin, whatever cors says (spec: fixed CORS answer)', async () => {
    const server = createServer({ ...configFor(0), cors: { origin: ['https://only.example'] } });
    servers.push(server);
    const { url } = await server.start();
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp']) {
      const pre = await fetch(`${url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET' },
      });
      expect(pre.status).toBe(200);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
      expect(pre.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
      const get = await fetch(`${url}${path}`, { headers: { origin: 'https://elsewhere.example' } });
      expect(get.headers.get('access-control-allow-origin')).toBe('*');
    }
  });

  it('refresh rotates; replaying a used refresh token revokes the family', async () => {
    const { base } = await startServer();
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    const { client } = await signInWithSdk(base, provider);
    const first = provider.saved!;
    expect(await auth(provider, { serverUrl: new URL(`${base}/mcp`) })).toBe('AUTHORIZED');
    const second = provider.saved!;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await callWhoami(client)).sub).toBe(aliceId());

    // An attacker replays the first refresh token.
    const replay = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refresh_token!, client_id: provider.info!.client_id }),
    });
    expect(replay.status).toBe(400);
    expect((await replay.json()).error).toBe('invalid_grant');
    // The whole family is gone: the current access token and refresh token too.
    const refused = await rawToolCall(base, second.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token".*session not found/);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("the provider's own tokens are never accepted on /mcp", async () => {
    const { base } = await startServer();
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    await signInWithSdk(base, provider);
    // A token signed by the provider (RS256, iss = the provider) is not ours.
    const res = await fetch(`${idp.issuer}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const forged = `${Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid: 'x' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: idp.issuer, sub: 'alice', aud: `${base}/mcp`, exp: 9e9 })).toString('base64url')}.sig`;
    expect((await rawToolCall(base, forged)).status).toBe(401);
  });

  it.skipIf(!testRedisAt.ok)('a session revoked on one instance is refused at once by another that had it cached', async () => {
    const keyPrefix = `oauth-e2e-signals-${process.pid}-${Date.now()}:`;
    const storage = { type: 'redis' as const, redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } };
    try {
      // Sessions are cached for a minute: only the cross-instance signal can make B notice in time.
      const a = await startServer({ sessionCacheMs: 60_000 }, storage);
      const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
      await signInWithSdk(a.base, provider);
      // Two instances behind one public address: B is told A's (publicUrl), the audience of the token.
      const b = await start(configFor(0, { sessionCacheMs: 60_000, publicUrl: a.base }, storage));
      const token = provider.saved!.access_token;
      const whoamiOn = async (base: string) =>
        (
          await fetch(`${base}/rpc`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'e2e.whoami' }),
          })
        ).json();
      expect((await whoamiOn(b.base)).result?.sub).toBe(aliceId()); // B now has the session cached
      const revoked = await fetch(`${a.base}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: provider.saved!.refresh_token!, client_id: provider.info!.client_id }),
      });
      expect(revoked.status).toBe(200);
      expect((await whoamiOn(a.base)).error?.message).toBe('session not found');
      // The signal travels through Redis pub/sub: allow it a moment, far below the 60 s cache.
      const reply = await waitFor(
        async () => {
          const r = await whoamiOn(b.base);
          return !r.result && r;
        },
        { timeoutMs: 2000, intervalMs: 20, what: 'the revocation reached instance b' },
      );
      expect(reply.result).toBeUndefined();
      expect(reply.error?.message).toBe('session not found');
    } finally {
      await dropTestKeys(testRedisAt, keyPrefix);
    }
  });

  describe.each(
    (
      [
        [
          'file',
          async () => {
            const dir = await mkdtemp(join(tmpdir(), 'oauth-e2e-'));
            return { sessionStorage: { type: 'file' as const, filePath: dir }, cleanup: () => rm(dir, { recursive: true, force: true }) };
          },
        ],
        [
          'redis',
          async () => {
            const keyPrefix = `oauth-e2e-${process.pid}-${Date.now()}:`;
            return {
              sessionStorage: { type: 'redis' as const, redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } },
              cleanup: async () => void (await dropTestKeys(testRedisAt, keyPrefix)),
            };
          },
        ],
      ] as const
    ).filter(([kind]) => kind !== 'redis' || testRedisAt.ok),
  )('%s session storage', (_kind, setup) => {
    it('sessions, refresh tokens and signing keys survive a restart', async () => {
      const { sessionStorage, cleanup } = await setup();
      try {
        const first = await startServer({ sessionStorage });
        const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
        await signInWithSdk(first.base, provider);
        await first.server.stop();
        await poolSeesClosedSockets();

        const second = await startServer({ sessionStorage });
        expect(second.base).toBe(first.base);
        const { client } = await connect(second.base, provider);
        expect((await callWhoami(client)).sub).toBe(aliceId());
        expect(await auth(provider, { serverUrl: new URL(`${second.base}/mcp`) })).toBe('AUTHORIZED');
        expect((await callWhoami(client)).sub).toBe(aliceId());
      } finally {
        await cleanup();
      }
    });

    it("a changed encryptionKey makes old sessions fail as 'session not found'", async () => {
      const { sessionStorage, cleanup } = await setup();
      try {
        const first = await startServer({ sessionStorage });
        const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
        await signInWithSdk(first.base, provider);
        await first.server.stop();
        await poolSeesClosedSockets();

        const second = await startServer({ sessionStorage, encryptionKey: 'another-encryption-key-0123456789-xyz' });
        const res = await rawToolCall(second.base, provider.saved!.access_token);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toContain('error_description="session not found"');
        const refresh = await fetch(`${second.base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'refresh_token',
            refresh_token: provider.saved!.refresh_token!,
            client_id: provider.info!.client_id,
          }),
        });
        // The client registration is sealed under the old key too: the client must register again.
        expect(refresh.status).toBe(401);
        expect((await refresh.json()).error).toBe('invalid_client');
      } finally {
        await cleanup();
      }
    });
  });

  it.skipIf(!testRedisAt.ok)(
    'a session Redis that lost its data (emptied, marked lost by a server that saw it) does not stop the next server: old tokens are refused, signing in works again',
    async () => {
      const keyPrefix = `oauth-lost-${process.pid}-${Date.now()}:`;
      const sessionStorage = { type: 'redis' as const, redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } };
      const redis = new Redis({ host: testRedisAt.host, port: testRedisAt.port, lazyConnect: true });
      try {
        const first = await startServer({ sessionStorage });
        const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
        await signInWithSdk(first.base, provider);
        await first.server.stop();
        await poolSeesClosedSockets();
        // Emptied (a Redis without persistence restarted), and marked as a money store's loss is marked.
        await dropTestKeys(testRedisAt, keyPrefix);
        await redis.set(`${keyPrefix}storeid`, 'lost');

        const second = await startServer({ sessionStorage });
        expect((await rawToolCall(second.base, provider.saved!.access_token)).status).toBe(401);
        const again = new MemoryOAuthProvider(CLIENT_REDIRECT);
        await signInWithSdk(second.base, again);
        const { client } = await connect(second.base, again);
        expect((await callWhoami(client)).sub).toBe(aliceId());
      } finally {
        redis.disconnect();
        await dropTestKeys(testRedisAt, keyPrefix);
      }
    },
  );
});
