import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres, testService, type PrivateServer } from '@ai-backend/test-utils/services';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * PostgreSQL itself stops (immediate shutdown, as a crash) and starts again, on a private cluster
 * this test owns. Every way of presenting a credential that reads the store (an `aib_` API key is
 * looked up in it) must answer 503, never 401: a client told 401 drops its key or signs the user
 * out (LiteLLM #38121). No call is served for free, `/health/ready` names the store, and the same
 * server serves again once PostgreSQL is back, with a balance equal to its ledger.
 */
// Through the shared detection: under AI_BACKEND_REQUIRE_SERVICES=1 a missing binary fails the run.
const pgServer = await testService('postgres-server');

describe.skipIf(!pgServer.ok)('PostgreSQL stops and restarts', () => {
  let pg: PrivateServer & { user: string; database: string };
  let upstream: TestUpstream;
  let gw: AiServer;
  let userToken: string;
  let apiKey: string;
  const sub = 'pg-restart-user';

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, {
      storage: { type: 'postgres', postgres: { host: pg.host, port: pg.port, user: pg.user, database: pg.database } },
    });
    userToken = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('pg-restart-admin', { admin: true }), sub, 5000, 'pg-restart-1');
    const made = await rpcCall<{ key: string }>(gw.url, userToken, 'keys.create', { name: 'outage' });
    apiKey = made.result!.key;
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await pg?.close();
  });

  const chat = (credential: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
    });

  it('API keys and tokens answer 503 within 1 s while it is down, never 401 or a free call; it serves again after the restart', async () => {
    // A key's first use is past its verifier's cache (≤ 1 s): this call reads the key record.
    expect((await chat(apiKey)).status).toBe(200);
    const paidBefore = upstream.requests.length;

    await pg.stop();
    // The verified-key cache holds a record for at most 1 s: past it, the key must be read again.
    await new Promise((r) => setTimeout(r, 1100)); // deliberate: let the key verifier's 1 s cache lapse
    for (const [label, credential] of [
      ['api key', apiKey],
      ['jwt', userToken],
    ] as const) {
      const started = performance.now();
      const res = await chat(credential);
      const ms = performance.now() - started;
      expect(res.status, `${label} on /v1`).toBe(503);
      expect(ms, `${label} answered in ${Math.round(ms)} ms`).toBeLessThan(1000);
      const rpc = await rpcCall(gw.url, credential, 'billing.getTokenBalance');
      expect(rpc.error?.code, `${label} on /rpc`).toBe(-32053);
    }
    // /mcp decides on the credential before any call: a key it could not look up is not a bad key.
    const mcp = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'outage', version: '1' } },
      }),
    });
    expect(mcp.status, 'api key on /mcp').toBe(503);
    expect(mcp.headers.get('www-authenticate')).toBeNull();
    const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(models.status, 'api key on /v1/models').toBe(503);
    const messages = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status, 'api key on /v1/messages').toBe(503);
    const viaTrpc = await callVia(gw, 'trpc', apiKey, 'billing.getTokenBalance');
    expect(viaTrpc.ok ? 'ok' : viaTrpc.code).toBe('SERVICE_UNAVAILABLE');
    expect(upstream.requests.length, 'no call went upstream while the store was down').toBe(paidBefore);
    const ready = await fetch(`${gw.url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, { ok: boolean }> }).checks.storage).toEqual({ ok: false });

    await pg.start();
    const back = await fetch(`${gw.url}/health/ready`);
    expect(back.status).toBe(200);
    for (const credential of [apiKey, userToken]) expect((await chat(credential)).status).toBe(200);
    const balance = await rpcCall<{ virtualTokenBalance: number }>(gw.url, userToken, 'billing.getTokenBalance');
    const audit = await gw.runtime.billing.ledger.audit(sub);
    expect(audit.consistent).toBe(true);
    expect(balance.result!.virtualTokenBalance).toBeLessThan(5000);
  }, 60_000);
});
