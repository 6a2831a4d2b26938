import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres, testService, type HangableServer, type PrivateServer } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  sleep,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * PostgreSQL hangs (a private cluster whose processes are stopped) under the defaults an operator
 * runs with: rate limiting on (its counters in the same PostgreSQL, no Redis configured) and the
 * 0.8 s query timeout. Calls come one at a time, more than a second apart, so the rate limiter
 * asks the store for each. Its count used to meet the hang first, let the call through after the
 * timeout (limits fail open), and the call's own query then waited a second timeout: 503 after
 * 1.6 s; an API key on /mcp waited for its lookup, then for the request count. Every answer must
 * be a 503 after one timeout (under 1.5 s: one 0.8 s timeout and a loaded machine's slack, where
 * two take 1.6 s; CI beside other work read 1.26 s for one), never a 401, and nothing may reach
 * the provider.
 */
const pgServer = await testService('postgres-server');

describe.skipIf(!pgServer.ok)('PostgreSQL hangs with rate limiting on', () => {
  let pg: PrivateServer & HangableServer & { user: string; database: string };
  let upstream: TestUpstream;
  let gw: AiServer;
  const sub = 'pg-hang-rl-user';
  let token: string;
  let apiKey: string;
  let session: string;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, {
      mcp: { rateLimiting: { enabled: true } },
      storage: { type: 'postgres', postgres: { host: pg.host, port: pg.port, user: pg.user, database: pg.database } },
    });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('pg-hang-rl-admin', { admin: true }), sub, 100_000, 'pg-hang-rl-1');
    apiKey = (await rpcCall<{ key: string }>(gw.url, token, 'keys.create', { name: 'hang' })).result!.key;
  }, 60_000);
  afterAll(async () => {
    await pg?.thaw();
    await gw?.stop();
    await upstream?.close();
    await pg?.close();
  });

  const mcp = (credential: string, body: unknown, sessionId?: string) =>
    fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${credential}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
      },
      body: JSON.stringify(body),
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hang', version: '1' } },
  };
  const generate = { content: 'hi', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } };

  /** Each case answers with its HTTP status and a JSON-RPC error code where the entry point has one. */
  const cases: Array<[string, () => Promise<{ status: number; code?: number }>]> = [
    [
      'jwt: ai.generateText on /rpc',
      async () => {
        const r = await rpcCall(gw.url, token, 'ai.generateText', generate);
        return { status: 200, code: r.error?.code };
      },
    ],
    [
      'jwt: tools/call in an open MCP session',
      async () => {
        const res = await mcp(
          token,
          { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'generateText', arguments: generate } },
          session,
        );
        const code = /"code":(-?\d+)/.exec(await res.text())?.[1];
        return { status: res.status, ...(code ? { code: Number(code) } : {}) };
      },
    ],
    [
      'api key: initialize on /mcp',
      async () => {
        const res = await mcp(apiKey, initialize);
        expect(res.headers.get('www-authenticate')).toBeNull();
        return { status: res.status, code: ((await res.json()) as { error?: { code: number } }).error?.code };
      },
    ],
    [
      'api key: /v1/chat/completions',
      async () => {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
        });
        await res.text();
        return { status: res.status };
      },
    ],
  ];

  it('answers every call 503 after one timeout (0.8 s), not two (the limiter’s and the call’s), and serves again once PostgreSQL answers', async () => {
    const opened = await mcp(token, initialize);
    expect(opened.status).toBe(200);
    session = opened.headers.get('mcp-session-id')!;
    await opened.text();
    await mcp(token, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    expect((await rpcCall(gw.url, token, 'ai.generateText', generate)).result).toBeTruthy();
    const served = upstream.requests.length;

    await pg.freeze();
    const answers: string[] = [];
    try {
      for (const [label, run] of cases) {
        // deliberate: past the limiter's 1 s pause after a failed count, so this call's count asks the store
        await sleep(1100);
        const started = performance.now();
        const { status, code } = await run();
        const ms = Math.round(performance.now() - started);
        answers.push(`${label}: ${status} ${code ?? ''} in ${ms} ms`);
        expect(status === 503 || (status === 200 && code === -32053), answers.at(-1)).toBe(true);
        expect(ms, answers.at(-1)).toBeLessThan(1500);
      }
    } finally {
      await pg.thaw();
    }
    expect(upstream.requests.length, 'no call went upstream while the store hung').toBe(served);

    expect((await rpcCall(gw.url, token, 'ai.generateText', generate)).result).toBeTruthy();
    const again = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
    });
    expect(again.status).toBe(200);
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
  }, 60_000);
});
