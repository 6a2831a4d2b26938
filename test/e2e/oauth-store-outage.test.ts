import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { startPrivatePostgres, testService, type HangableServer, type PrivateServer } from '@ai-backend/test-utils/services';
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
  let pg: PrivateServer & HangableServer & { user: string; database: string };
  let provider: MemoryOAuthProvider;
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
    provider = new MemoryOAuthProvider('http://127.0.0.1:8978/callback');
    const serverUrl = new URL(`${base}/mcp`);
    expect(await auth(provider, { serverUrl, scope: 'mcp mcp:call' })).toBe('REDIRECT');
    const done = await completeSignIn(provider.authorizationUrl!.href, 'bob');
    expect(await auth(provider, { serverUrl, authorizationCode: done.redirect.searchParams.get('code')! })).toBe('AUTHORIZED');
    token = provider.saved!.access_token;
  }, 60_000);
  afterAll(async () => {
    await pg?.thaw();
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

  // The token endpoint's rate limit counts in the same PostgreSQL: its count met the hang first and
  // let the request through after the 0.8 s timeout, whose own read then waited as long (1.6 s).
  it('a refresh while PostgreSQL hangs answers 503 temporarily_unavailable within 1 s, and the refresh token works after', async () => {
    const refresh = () =>
      fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: provider.saved!.refresh_token!,
          client_id: provider.info!.client_id,
        }),
      });
    await pg.freeze();
    try {
      // deliberate: past the rate limiter's 1 s pause after a failed count, so the count asks the store
      await new Promise((r) => setTimeout(r, 1100));
      const started = performance.now();
      const res = await refresh();
      const ms = performance.now() - started;
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe('temporarily_unavailable');
      expect(ms, `answered in ${Math.round(ms)} ms`).toBeLessThan(1000);
    } finally {
      await pg.thaw();
    }
    const after = await refresh();
    expect(after.status).toBe(200);
    expect(((await after.json()) as { access_token?: string }).access_token).toBeTruthy();
  }, 60_000);
});
