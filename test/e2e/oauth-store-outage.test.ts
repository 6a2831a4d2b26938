import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { startPrivatePostgres, testService, type PrivateServer } from '@ai-backend/test-utils/services';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

/**
 * An OAuth access token from a real sign-in (our authorization server in front of panva's
 * oidc-provider) is accepted only while its session exists in the store. With the store's
 * PostgreSQL stopped, the session cannot be read: the token is neither good nor bad, so every
 * entry point answers 503, never the 401 that makes an MCP client start a new sign-in
 * (LiteLLM #38121). Once PostgreSQL is back the same token works without a new sign-in.
 */
// Through the shared detection: under AI_BACKEND_REQUIRE_SERVICES=1 a missing binary fails the run.
const pgServer = await testService('postgres-server');

describe.skipIf(!pgServer.ok)('OAuth tokens while the store is down', () => {
  let pg: PrivateServer & { user: string; database: string };
  let idp: TestIdp;
  let server: AiBackendServer;
  let base = '';
  let token = '';

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    idp = await startIdp();
    server = createServer({
      host: '127.0.0.1',
      port: 0,
      monitoring: { logging: { level: 'silent' } },
      storage: { type: 'postgres', postgres: { host: pg.host, port: pg.port, user: pg.user, database: pg.database } },
      mcp: { auth: { authType: 'oauth' }, sessionMode: 'stateless' },
      // Every request reads the session: no cached session hides the outage.
      oauth: {
        encryptionKey: 'oauth-store-outage-encryption-key-0123456789',
        providerClientId: IDP_CLIENT_ID,
        providerClientSecret: IDP_CLIENT_SECRET,
        provider: { issuer: idp.issuer },
        sessionCacheMs: 0,
      },
    });
    base = (await server.start()).url.replace(/\/$/, '');
    idp.configure(`${base}/oauth/callback`);
    const provider = new MemoryOAuthProvider('http://127.0.0.1:8978/callback');
    const serverUrl = new URL(`${base}/mcp`);
    expect(await auth(provider, { serverUrl, scope: 'mcp mcp:call' })).toBe('REDIRECT');
    const done = await completeSignIn(provider.authorizationUrl!.href, 'bob');
    expect(await auth(provider, { serverUrl, authorizationCode: done.redirect.searchParams.get('code')! })).toBe('AUTHORIZED');
    token = provider.saved!.access_token;
  }, 60_000);
  afterAll(async () => {
    await server?.stop().catch(() => undefined);
    await idp?.close();
    await pg?.close();
  });

  const rpc = () =>
    fetch(`${base}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'billing.getTokenBalance' }),
    });
  const mcpList = () =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });

  it('answers 503 on /rpc and /mcp while PostgreSQL is stopped, never 401, and the same token works after', async () => {
    expect((await rpc()).status).toBe(200);
    expect((await mcpList()).status).toBe(200);

    await pg.stop();
    const started = performance.now();
    const r = await rpc();
    const body = (await r.json()) as { error?: { code: number } };
    expect(body.error?.code).toBe(-32053);
    const m = await mcpList();
    expect(m.status).toBe(503);
    expect(m.headers.get('www-authenticate')).toBeNull();
    expect(performance.now() - started).toBeLessThan(2000);

    await pg.start();
    expect((await rpc()).status).toBe(200);
    expect((await mcpList()).status).toBe(200);
  }, 60_000);
});
