/**
 * Ids that are not Unicode text: a JSON string with an unpaired surrogate (`"\ud800"`) reached
 * the storage keys, where `encodeURIComponent` throws, and every procedure that took a user id or
 * an e-mail (billing.creditTokens, admin.getUserInfo, auth.getUserProviders, keys.adminList, …)
 * answered an internal error. Now a 400 at the edge on every entry point; surrogate pairs (an
 * emoji) are ids like any other. Real server, real clients (tRPC, JSON-RPC, MCP SDK).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { callVia, createTestUpstream, JWT_SECRET, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  admin = await tokenFor('hostile-ids-admin', { admin: true });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

const CALLS: Array<[string, Record<string, unknown>]> = [
  ['billing.creditTokens', { userId: '\ud800', tokens: 5, type: 'subscription', idempotencyKey: 'lone-1' }],
  ['admin.getUserInfo', { userId: 'x\udc00' }],
  ['auth.getUserProviders', { email: '\udbff@example.com' }],
];

describe.each(['trpc', 'rpc', 'mcp'] as const)('an unpaired surrogate in an id over %s', (entry) => {
  it.each(CALLS)('%s is BAD_REQUEST naming the surrogate, not an internal error', async (path, input) => {
    // The MCP SDK client raises an HTTP 400 as an error (it never reached JSON-RPC dispatch).
    const out = await callVia(gw, entry, admin, path, input).catch((e: unknown) => ({ ok: false, message: String(e) }));
    expect(out).toMatchObject({ ok: false });
    expect(JSON.stringify(out)).toMatch(/unpaired surrogate/);
    expect(JSON.stringify(out)).not.toMatch(/INTERNAL|internal error/);
    expect((await fetch(gw.url + '/health')).status).toBe(200);
  });
});

describe('a signed token whose subject or e-mail is not Unicode text', () => {
  it.each([
    ['sub', { sub: 'jwt-\ud800' }],
    ['email', { sub: 'jwt-fine', email: '\udc00@example.com' }],
  ])('%s: a 401 invalid token on every entry point, not an internal error on the first per-user key', async (_, claims) => {
    const token = await mintDevToken({ secret: JWT_SECRET, scopes: ['mcp'], ...claims });
    for (const entry of ['trpc', 'rpc'] as const) {
      const out = await callVia(gw, entry, token, 'billing.getTokenBalance');
      expect(out, entry).toMatchObject({ ok: false, code: 'UNAUTHORIZED', message: expect.stringMatching(/invalid (sub|email) claim/) });
    }
    const res = await fetch(gw.url + '/v1/models', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
  });
});

describe('a surrogate pair is an id like any other', () => {
  it('credits and reads back the balance of an emoji user id', async () => {
    const userId = 'emoji-\ud83d\ude00';
    const credited = await callVia(gw, 'rpc', admin, 'billing.creditTokens', {
      userId,
      tokens: 7,
      type: 'one_time',
      idempotencyKey: 'pair-1',
    });
    expect(credited).toMatchObject({ ok: true, data: { applied: true, balance: 7 } });
  });
});
