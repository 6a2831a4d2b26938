/**
 * Provider key checks (ai.validateProvider, auth.validateUserKey) are counted per address and
 * per identity on every entry point that offers them (/trpc and /rpc; neither is an MCP tool),
 * so the server is no free relay for testing stolen keys. Real server, real upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callVia, createTestUpstream, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

let upstream: TestUpstream;
let gw: AiServer;

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { keyChecks: { maxPerIdentity: 2, maxPerAddress: 4 } } });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe('key checks are rate limited', () => {
  it('per identity, then per address, on /trpc and /rpc; refused checks never reach the provider', async () => {
    const user = await tokenFor('key-checker');
    const check = { provider: 'openai', apiKey: 'sk-stolen-candidate-0001' };
    expect(await callVia(gw, 'trpc', user, 'ai.validateProvider', check)).toMatchObject({ ok: true });
    expect(await callVia(gw, 'rpc', user, 'ai.validateProvider', check)).toMatchObject({ ok: true });
    const before = upstream.requests.length;
    // Third check by the same identity: its budget of 2 is spent, on either entry point.
    expect(await callVia(gw, 'rpc', user, 'ai.validateProvider', check)).toMatchObject({
      ok: false,
      code: 'TOO_MANY_REQUESTS',
      details: { kind: 'keyChecks', limit: 2 },
    });
    expect(await callVia(gw, 'trpc', user, 'ai.validateProvider', check)).toMatchObject({ ok: false, code: 'TOO_MANY_REQUESTS' });
    // Every check above also counted against the address (4 of 4): without a token it is refused too.
    const anon: Array<{ ok: boolean }> = [];
    for (let i = 0; i < 3; i++) anon.push(await callVia(gw, 'rpc', null, 'ai.validateProvider', check));
    expect(anon.map((o) => o.ok)).toEqual([false, false, false]);
    expect(upstream.requests.length).toBe(before);
    // auth.validateUserKey counts against the same budgets.
    const other = await tokenFor('key-owner');
    expect(await callVia(gw, 'rpc', other, 'auth.validateUserKey', { email: 'key-owner', provider: 'openai' })).toMatchObject({
      ok: false,
      code: 'TOO_MANY_REQUESTS',
    });
  });
});
