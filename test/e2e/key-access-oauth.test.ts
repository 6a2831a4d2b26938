import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { createAppRouter, loadRouter, MemoryStorage, procedureIndex, type ConfigInput } from '@ai-backend/core/internal';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

/**
 * The OAuth column of the key access matrix, with access tokens from a real sign-in (our
 * authorization server in front of panva's oidc-provider, all on 127.0.0.1): every procedure over
 * /rpc with an administrator's and a user's token, keys made by an OAuth user, and the demoted
 * administrator of issue 35: `listed` lists alice in admin.users, `demoted` (the same store and
 * public URL) does not. Her token, minted with mcp:admin while she was listed, no longer makes
 * her an administrator on `demoted` and no longer lets her give a key the admin scope there.
 */
const PROCEDURES = await (async () => {
  const r = createAppRouter({});
  await loadRouter(r);
  return [...procedureIndex(r).values()].filter((p) => p.type !== 'subscription');
})();

let idp: TestIdp;
let listed: AiBackendServer;
let demoted: AiBackendServer;
let base = '';
let demotedBase = '';
const tokens = {} as Record<'alice' | 'bob', string>;

function configFor(admins: string[], publicUrl?: string): ConfigInput {
  return {
    host: '127.0.0.1',
    port: 0,
    monitoring: { logging: { level: 'silent' } },
    admin: { users: admins },
    limits: { maxBatchSize: 200 },
    mcp: { auth: { authType: 'oauth' }, sessionMode: 'stateless', rateLimiting: { enabled: false } },
    oauth: {
      encryptionKey: 'key-access-oauth-encryption-key-0123456789',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
      ...(publicUrl ? { publicUrl } : {}),
    },
  };
}

async function signIn(login: string, scope: string): Promise<string> {
  const provider = new MemoryOAuthProvider('http://127.0.0.1:8978/callback');
  const serverUrl = new URL(`${base}/mcp`);
  expect(await auth(provider, { serverUrl, scope })).toBe('REDIRECT');
  const done = await completeSignIn(provider.authorizationUrl!.href, login);
  expect(await auth(provider, { serverUrl, authorizationCode: done.redirect.searchParams.get('code')! })).toBe('AUTHORIZED');
  return provider.saved!.access_token;
}

async function rpc(url: string, token: string, body: unknown): Promise<any> {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return res.json();
}
const call = (url: string, token: string, method: string, params?: unknown) =>
  rpc(url, token, { jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) });

beforeAll(async () => {
  idp = await startIdp();
  const storage = new MemoryStorage();
  listed = createServer(configFor(['alice@example.com']), { storage });
  base = (await listed.start()).url.replace(/\/$/, '');
  idp.configure(`${base}/oauth/callback`);
  // The same store and public URL: the tokens `listed` issues are valid here too.
  demoted = createServer(configFor([], base), { storage });
  demotedBase = (await demoted.start()).url.replace(/\/$/, '');
  tokens.alice = await signIn('alice', 'mcp mcp:call mcp:admin');
  tokens.bob = await signIn('bob', 'mcp mcp:call');
}, 60_000);

afterAll(async () => {
  await demoted?.stop().catch(() => undefined);
  await listed?.stop().catch(() => undefined);
  await idp?.close();
});

const demotedUrl = () => demotedBase;

describe('OAuth access tokens and API keys', () => {
  it.each(['alice', 'bob'] as const)('%s: every procedure over /rpc gets what the policy says for an OAuth token', async (who) => {
    const batch = PROCEDURES.map((p, i) => ({ jsonrpc: '2.0', id: i, method: p.path, params: { __matrix: 1 } }));
    const replies = (await rpc(base, tokens[who], batch)) as Array<{ id: number; error?: { data: { appCode?: string } } }>;
    const refusals = ['UNAUTHORIZED', 'FORBIDDEN', 'INVALID_TOKEN', 'INSUFFICIENT_SCOPE'];
    const mismatches: string[] = [];
    PROCEDURES.forEach((p, i) => {
      const code = replies.find((r) => r.id === i)!.error?.data.appCode;
      const got = code && refusals.includes(code) ? code : 'PASSED';
      const want = p.meta?.access === 'admin' && who === 'bob' ? 'FORBIDDEN' : 'PASSED';
      if (got !== want) mismatches.push(`${p.path}: got ${got}, want ${want}`);
    });
    expect(mismatches).toEqual([]);
  });

  it('a key made by an OAuth user cannot rewrite the account', async () => {
    const made = await call(base, tokens.bob, 'keys.create', { name: 'narrow' });
    const key = made.result.key as string;
    for (const [method, params] of [
      ['user.configureBYOK', { enabled: true, providers: ['openai'] }],
      ['user.updateUserPreferences', { consumptionOrder: ['byok', 'platform'] }],
      ['auth.storeUserKey', { email: 'bob@example.com', provider: 'openai', apiKey: 'sk-attacker-0123456789abcdef' }],
    ] as const) {
      expect((await call(base, key, method, params)).error?.data, method).toMatchObject({
        appCode: 'FORBIDDEN',
        details: { reason: 'key_not_allowed' },
      });
    }
    expect((await call(base, key, 'billing.getTokenBalance')).result).toBeDefined();
  });

  it("a demoted administrator's token still carrying mcp:admin neither administers nor gives the admin scope", async () => {
    expect((await call(base, tokens.alice, 'admin.status')).result).toBeDefined();
    const adminKey = (await call(base, tokens.alice, 'keys.create', { name: 'ops', scopes: ['mcp:admin'] })).result.key as string;
    expect((await call(base, adminKey, 'admin.status')).result).toBeDefined();
    // On the server that no longer lists her: the token, its key, and a new key are all refused.
    expect((await call(demotedUrl(), tokens.alice, 'admin.status')).error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    expect((await call(demotedUrl(), adminKey, 'admin.status')).error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    const again = await call(demotedUrl(), tokens.alice, 'keys.create', { name: 'again', scopes: ['mcp:admin'] });
    expect(again.error?.data).toMatchObject({ appCode: 'FORBIDDEN', details: { reason: 'scope_not_held' } });
    const credit = await call(demotedUrl(), tokens.alice, 'billing.creditTokens', {
      userId: 'x',
      tokens: 1_000_000,
      type: 'subscription',
      idempotencyKey: 'k',
    });
    expect(credit.error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
  });
});
