import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createLogger, MemoryStorage, type AppRouter } from '@ai-backend/core/internal';
import { mintDevToken } from '@ai-backend/auth';
import { createServer, type AiBackendServer } from '@ai-backend/transports';

/**
 * BYOK isolation and billing over the real entry points (/trpc, /rpc, /mcp) with JWT identities:
 * user B can reach none of user A's keys, and keys never show in responses, logs or the store.
 */
const SECRET = 'e2e-jwt-secret-0123456789abcdef0123456789';
const ALICE_KEY = 'sk-e2e-alice-SECRET-key-0000-1111';
const BOB_KEY = 'sk-e2e-bob-SECRET-key-0000-2222';

let server: AiBackendServer;
let url: string;
const storage = new MemoryStorage();
const logs: string[] = [];
const seen: string[] = [];
const tokens: Record<'alice' | 'bob' | 'admin', string> = { alice: '', bob: '', admin: '' };

beforeAll(async () => {
  server = createServer(
    {
      port: 0,
      host: '127.0.0.1',
      mcp: { auth: { authType: 'jwt' } },
      jwt: { secret: SECRET },
      admin: { users: ['admin-sub'] },
      billing: { vaultKey: 'e2e-vault-master-key-0123456789abcdef' },
    },
    { storage, logger: createLogger('debug', (l) => logs.push(l)) },
  );
  url = (await server.start()).url;
  tokens.alice = await mintDevToken({ secret: SECRET, sub: 'alice-sub', email: 'alice@example.com' });
  tokens.bob = await mintDevToken({ secret: SECRET, sub: 'bob-sub', email: 'bob@example.com' });
  tokens.admin = await mintDevToken({ secret: SECRET, sub: 'admin-sub', email: 'admin@example.com' });
});
afterAll(() => server.stop());

const trpc = (who: keyof typeof tokens) =>
  createTRPCClient<AppRouter>({
    links: [httpLink({ url: url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${tokens[who]}` }) })],
  });

async function rpc(who: keyof typeof tokens | null, method: string, params: unknown) {
  const res = await fetch(url + '/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${tokens[who]}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  seen.push(text);
  return JSON.parse(text) as { result?: any; error?: { code: number; message: string; data?: Record<string, unknown> } };
}

describe('BYOK keys over /trpc and /rpc', () => {
  it('each user stores their own key', async () => {
    const a = await trpc('alice').auth.storeUserKey.mutate({ email: 'alice@example.com', provider: 'openai', apiKey: ALICE_KEY });
    seen.push(JSON.stringify(a));
    expect(a).toMatchObject({ success: true, exists: true, last4: '1111' });
    const b = await rpc('bob', 'auth.storeUserKey', { email: 'bob@example.com', provider: 'provider_b', apiKey: BOB_KEY });
    expect(b.result).toMatchObject({ success: true, provider: 'openai', last4: '2222' });
  });

  it("bob reaches none of alice's key procedures, on either entry point", async () => {
    for (const [name, extra] of [
      ['getUserKey', {}],
      ['getUserProviders', {}],
      ['storeUserKey', { apiKey: BOB_KEY }],
      ['rotateUserKey', { newApiKey: BOB_KEY }],
      ['deleteUserKey', {}],
      ['validateUserKey', {}],
    ] as const) {
      for (const email of ['alice@example.com', 'alice-sub']) {
        const viaRpc = await rpc('bob', `auth.${name}`, { email, provider: 'openai', ...extra });
        expect(viaRpc.error?.data, `${name} via /rpc`).toMatchObject({ code: 'FORBIDDEN' });
        const client = trpc('bob').auth as Record<
          string,
          { query?: (i: unknown) => Promise<unknown>; mutate?: (i: unknown) => Promise<unknown> }
        >;
        const proc = client[name]!;
        const input = { email, provider: 'openai', ...extra };
        const pending = name === 'getUserKey' || name === 'getUserProviders' ? proc.query!(input) : proc.mutate!(input);
        const err = await pending.catch((e: { data?: unknown; message: string }) => {
          seen.push(e.message);
          return e;
        });
        expect((err as { data?: { code?: string } }).data?.code, `${name} via /trpc`).toBe('FORBIDDEN');
      }
    }
    expect((await trpc('alice').auth.getUserKey.query({ email: 'alice@example.com', provider: 'openai' })).last4).toBe('1111');
  });

  it('anonymous callers are refused', async () => {
    expect((await rpc(null, 'auth.getUserKey', { email: 'alice@example.com', provider: 'openai' })).error?.data).toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect((await rpc(null, 'billing.getTokenBalance', undefined)).error?.data).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('an administrator credits tokens; the user sees them; a replay changes nothing', async () => {
    const input = { userId: 'alice-sub', tokens: 5000, type: 'one_time' as const, idempotencyKey: 'e2e-1' };
    expect((await rpc('alice', 'billing.creditTokens', input)).error?.data).toMatchObject({ code: 'FORBIDDEN' });
    expect(await trpc('admin').billing.creditTokens.mutate(input)).toMatchObject({ applied: true, balance: 5000 });
    expect((await rpc('admin', 'billing.creditTokens', input)).result).toMatchObject({ applied: false, balance: 5000 });
    expect(await trpc('alice').billing.getTokenBalance.query()).toMatchObject({ virtualTokenBalance: 5000, balances: { one_time: 5000 } });
    expect((await rpc('bob', 'billing.getTokenBalance', undefined)).result).toMatchObject({ virtualTokenBalance: 0 });
    const bad = await rpc('alice', 'billing.getUsageHistory', { limit: 5000 });
    expect(bad.error?.data).toMatchObject({ code: 'BAD_REQUEST' });
    expect(JSON.stringify(bad.error)).toContain('limit must be an integer from 1 to 1000');
  });
});

describe('BYOK keys over /mcp', () => {
  it('key procedures are not MCP tools; billing reads are, and they need a token', async () => {
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${tokens.bob}` } } }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const n of [
        'storeUserKey',
        'getUserKey',
        'rotateUserKey',
        'deleteUserKey',
        'validateUserKey',
        'getUserProviders',
        'creditTokens',
        'configureBYOK',
      ]) {
        expect(names).not.toContain(n);
      }
      expect(names).toContain('getTokenBalance');
      const r = await client.callTool({ name: 'getTokenBalance', arguments: {} });
      seen.push(JSON.stringify(r));
      const [first] = r.content as Array<{ type: string; text: string }>;
      expect(JSON.parse(first!.text)).toMatchObject({ virtualTokenBalance: 0 });
    } finally {
      await client.close();
    }
  });
});

describe('no key in plain text anywhere', () => {
  it('responses, logs and the store hold no key', async () => {
    const dump: string[] = [];
    for (const k of await storage.keys('')) dump.push(k, JSON.stringify(await storage.get(k)));
    expect(dump.join('\n')).toContain('vault:');
    for (const [where, text] of Object.entries({ responses: seen.join('\n'), logs: logs.join('\n'), store: dump.join('\n') })) {
      expect(text, where).not.toContain('SECRET');
    }
  });
});
