/**
 * Google answers an API key it does not take with HTTP 400 `INVALID_ARGUMENT`, naming
 * `API_KEY_INVALID` only in `error.details` (docs/ai.md#errors). Read by its status alone, that is
 * a refusal of the request, which is the caller's 400: a caller's bad key would look like a bad
 * prompt, a platform key Google stopped taking would be blamed on every caller, and a key check
 * would say "could not be checked". Real server, the test upstream answering as Google does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

const BAD_KEY = 'invalid-google-key-SECRET-0001';
let upstream: TestUpstream;
let gw: AiServer;
let user: string;

beforeAll(async () => {
  upstream = await createTestUpstream({ keyRefusal: 'google' });
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  user = await tokenFor('google-key-user');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe("a key Google refuses with its 400 is a refused key, not the caller's bad request", () => {
  it('ai.validateProvider says the key was rejected', async () => {
    const bad = await callVia(gw, 'rpc', user, 'ai.validateProvider', { provider: 'google', apiKey: BAD_KEY });
    expect(bad).toMatchObject({ ok: true, data: { valid: false, reason: 'invalid_key', status: 400 } });
    const good = await callVia(gw, 'rpc', user, 'ai.validateProvider', { provider: 'google', apiKey: 'google-key-that-works' });
    expect(good).toMatchObject({ ok: true, data: { valid: true } });
  });

  it("a caller's own key: 502 invalid_key on /rpc and /v1, tried once, the key never echoed", async () => {
    const sent = upstream.requests.length;
    const rpc = await callVia(gw, 'rpc', user, 'ai.generateText', {
      content: 'hi',
      systemPrompt: 's',
      provider: 'google',
      apiKey: BAD_KEY,
    });
    expect(rpc).toMatchObject({ ok: false, appCode: 'UPSTREAM_ERROR', details: { reason: 'invalid_key', status: 400 } });
    expect(JSON.stringify(rpc)).not.toContain(BAD_KEY);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json', 'x-provider-api-key': BAD_KEY },
      body: JSON.stringify({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const text = await res.text();
    expect(text).toContain('rejected the API key');
    expect(text).not.toContain(BAD_KEY);
    expect(upstream.requests.length - sent).toBe(2);
    expect(gw.logs.join('\n')).not.toContain(BAD_KEY);
  });

  it("the platform's key refused: 502 invalid_key for the caller, not a 400", async () => {
    const strict = await createTestUpstream({ keyRefusal: 'google', validKeys: ['some-other-key'] });
    const server = await startAiServer(strict, { storage: { type: 'memory' } });
    try {
      await creditTokens(server.url, await tokenFor('gk-admin', { admin: true }), 'gk-paying', 10_000, 'gk-credit');
      const paying = await tokenFor('gk-paying');
      const r = await callVia(server, 'rpc', paying, 'ai.generateText', { content: 'hi', systemPrompt: 's', provider: 'google' });
      expect(r).toMatchObject({ ok: false, appCode: 'UPSTREAM_ERROR', details: { reason: 'invalid_key', status: 400 } });
      expect(JSON.stringify(r) + server.logs.join('\n')).not.toContain(SERVER_KEY);
    } finally {
      await server.stop();
      await strict.close();
    }
  });
});
