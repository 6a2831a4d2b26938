import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawTestClient, testRedis } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '@ai-backend/core';
import {
  callVia,
  createTestUpstream,
  mcpClient,
  tokenFor,
  startAiServer,
  type AiServer,
  type Entry,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * BYOK isolation over /trpc, /rpc and MCP, on a file store and on a Redis store: user B can
 * read, validate, rotate, replace or delete none of user A's keys, nor spend them; and no key
 * ever shows in a response, a log line (server log and security log file) or the store's raw
 * data (the data directory's files; every Redis value under the test's prefix).
 */
const A = { sub: 'iso-alice', email: 'alice@iso.example' };
const B = { sub: 'iso-bob', email: 'bob@iso.example' };
const KEY_A = 'sk-alice-PLAINTEXT-a1b2c3d4e5f6-AAAA';
const KEY_A2 = 'sk-alice-PLAINTEXT-rotated-999-ZZZZ';
const KEY_B = 'sk-bob-PLAINTEXT-f6e5d4c3b2a1-BBBB';
const MARK = 'PLAINTEXT';

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream();
});
afterAll(() => upstream.close());

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

interface Backend {
  name: 'file' | 'redis';
  config(): Promise<ConfigInput>;
  /** Every byte the store holds, as text. */
  dump(): Promise<string>;
  /** Other places logs went. */
  extraLogs(): Promise<string>;
  cleanup(): Promise<void>;
}

function fileBackend(): Backend {
  let dir = '';
  return {
    name: 'file',
    async config() {
      dir = await mkdtemp(join(tmpdir(), 'byok-iso-'));
      return {
        storage: { type: 'file', dir: join(dir, 'data') },
        mcp: { securityLogging: { enabled: true, logLevel: 'debug', logToFile: true, logFilePath: join(dir, 'security.log') } },
      };
    },
    async dump() {
      const files = await filesUnder(join(dir, 'data'));
      return (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n');
    },
    async extraLogs() {
      return readFile(join(dir, 'security.log'), 'utf8');
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

const testRedisAt = await testRedis();

function redisBackend(): Backend {
  const keyPrefix = `e2e-byok-${randomUUID()}:`;
  const client = rawTestClient(testRedisAt);
  return {
    name: 'redis',
    async config() {
      await client.connect();
      return { storage: { type: 'redis', redis: { host: testRedisAt.host, port: testRedisAt.port, keyPrefix } } };
    },
    async dump() {
      const keys: string[] = [];
      for await (const batch of client.scanStream({ match: `${keyPrefix}*`, count: 500 })) keys.push(...(batch as string[]));
      const parts: string[] = [];
      for (const k of keys) {
        const type = await client.type(k);
        parts.push(
          k,
          type === 'list'
            ? (await client.lrange(k, 0, -1)).join('\n')
            : type === 'string'
              ? ((await client.get(k)) ?? '')
              : type === 'zset'
                ? (await client.zrange(k, '0', '-1', 'WITHSCORES')).join('\n')
                : JSON.stringify(await client.hgetall(k)),
        );
      }
      return parts.join('\n');
    },
    extraLogs: async () => '',
    async cleanup() {
      const keys: string[] = [];
      for await (const batch of client.scanStream({ match: `${keyPrefix}*`, count: 500 })) keys.push(...(batch as string[]));
      if (keys.length) await client.del(...keys);
      await client.quit();
    },
  };
}

describe.each(
  (
    [
      ['file', fileBackend],
      ['redis', redisBackend],
    ] as const
  ).filter(([name]) => name !== 'redis' || testRedisAt.ok),
)('BYOK isolation on a %s store', (_name, make) => {
  const backend = make();
  let gw: AiServer;
  const T = { a: '', b: '', bClaimingA: '' };
  const seen: string[] = [];
  const call = (entry: Entry, who: keyof typeof T, path: string, input?: unknown) => callVia(gw, entry, T[who], path, input, seen);

  beforeAll(async () => {
    gw = await startAiServer(upstream, await backend.config());
    T.a = await tokenFor(A.sub, { email: A.email });
    T.b = await tokenFor(B.sub, { email: B.email });
    // A token for B's subject that claims A's email address: the subject decides whose keys these are.
    T.bClaimingA = await tokenFor(B.sub, { email: A.email });
  });
  afterAll(async () => {
    await gw.stop();
    await backend.cleanup();
  });

  it('A and B store their own keys (A over /trpc, B over /rpc); A enables BYOK', async () => {
    expect(await call('trpc', 'a', 'auth.storeUserKey', { email: A.email, provider: 'openai', apiKey: KEY_A })).toMatchObject({
      ok: true,
      data: { last4: 'AAAA' },
    });
    expect(await call('rpc', 'a', 'user.configureBYOK', { providers: { anthropic: { enabled: true, apiKey: KEY_A } } })).toMatchObject({
      ok: true,
    });
    expect(await call('rpc', 'b', 'auth.storeUserKey', { email: B.email, provider: 'google', apiKey: KEY_B })).toMatchObject({
      ok: true,
      data: { last4: 'BBBB' },
    });
  });

  const attempts: Array<[string, Record<string, unknown>]> = [
    ['auth.getUserKey', { provider: 'openai' }],
    ['auth.getUserProviders', {}],
    ['auth.validateUserKey', { provider: 'openai' }],
    ['auth.rotateUserKey', { provider: 'openai', newApiKey: 'sk-bob-takes-over-0001' }],
    ['auth.storeUserKey', { provider: 'openai', apiKey: 'sk-bob-takes-over-0002' }],
    ['auth.deleteUserKey', { provider: 'openai' }],
  ];
  for (const entry of ['trpc', 'rpc'] as const) {
    it(`over /${entry}, B is refused every key procedure on A, by email (any case, padded) or by sub`, async () => {
      const before = upstream.requests.length;
      for (const [path, extra] of attempts) {
        for (const email of [A.email, A.email.toUpperCase(), ` ${A.email} `, A.sub]) {
          expect(await call(entry, 'b', path, { email, ...extra }), `${path} ${email}`).toMatchObject({ ok: false, code: 'FORBIDDEN' });
        }
      }
      expect(upstream.requests).toHaveLength(before); // no validation request went out with A's key
    });
  }

  it("over MCP, no key procedure is a tool, and B's generateText never spends A's stored key", async () => {
    const client = await mcpClient(gw.url, T.b);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const [path] of attempts) {
        const name = path.split('.')[1]!;
        expect(names).not.toContain(name);
        await expect(client.callTool({ name, arguments: { email: A.email, provider: 'openai' } })).rejects.toThrow(/unknown tool/);
      }
      expect(names).not.toContain('configureBYOK');
      expect(names).not.toContain('getBYOKStatus');
    } finally {
      await client.close();
    }
    const before = upstream.requests.length;
    expect(await call('mcp', 'b', 'ai.generateText', { content: 'spend alice', systemPrompt: 's', provider: 'anthropic' })).toMatchObject({
      ok: false,
      code: 'PAYMENT_REQUIRED',
    });
    // Even with BYOK switched on, B has no anthropic key of his own.
    expect(await call('rpc', 'b', 'user.updateUserPreferences', { byokEnabled: true })).toMatchObject({ ok: true });
    expect(await call('mcp', 'b', 'ai.generateText', { content: 'spend alice', systemPrompt: 's', provider: 'anthropic' })).toMatchObject({
      ok: false,
      code: 'PAYMENT_REQUIRED',
    });
    expect(await call('trpc', 'b', 'ai.generateText', { content: 'spend alice', systemPrompt: 's', provider: 'openai' })).toMatchObject({
      ok: false,
      code: 'PAYMENT_REQUIRED',
    });
    expect(upstream.requests).toHaveLength(before);
  });

  it("a token for B's subject that claims A's email reaches only B's own keys", async () => {
    const r = await call('rpc', 'bClaimingA', 'auth.getUserProviders', { email: A.email });
    expect(r).toMatchObject({ ok: true, data: { providers: ['google'] } });
    expect(await call('trpc', 'bClaimingA', 'auth.getUserKey', { email: A.email, provider: 'openai' })).toMatchObject({
      ok: true,
      data: { exists: false },
    });
  });

  it("A's keys are intact; A spends its stored key over MCP; A rotates and deletes its own", async () => {
    const status = await call('rpc', 'a', 'auth.getUserKey', { email: A.email, provider: 'openai' });
    expect(status).toMatchObject({ ok: true, data: { exists: true, last4: 'AAAA' } });
    expect(status.ok && status.data.rotatedAt).toBeFalsy(); // B's rotate attempts changed nothing
    const gen = await call('mcp', 'a', 'ai.generateText', { content: 'mine', systemPrompt: 's', provider: 'anthropic' });
    expect(gen).toMatchObject({ ok: true, data: { usageInfo: { tokensUsed: expect.any(Number) } } });
    expect(upstream.requests.at(-1)!.apiKey).toBe(KEY_A);
    expect(await call('trpc', 'a', 'auth.validateUserKey', { email: A.email, provider: 'openai' })).toMatchObject({
      ok: true,
      data: { valid: true },
    });
    expect(upstream.requests.at(-1)!.apiKey).toBe(KEY_A);
    expect(await call('rpc', 'a', 'auth.rotateUserKey', { email: A.email, provider: 'openai', newApiKey: KEY_A2 })).toMatchObject({
      ok: true,
      data: { last4: 'ZZZZ' },
    });
    expect(await call('trpc', 'a', 'user.getBYOKStatus')).toMatchObject({
      ok: true,
      data: { providers: { openai: { hasApiKey: true, last4: 'ZZZZ' }, anthropic: { hasApiKey: true, last4: 'AAAA' } } },
    });
    expect(await call('rpc', 'a', 'auth.deleteUserKey', { email: A.email, provider: 'anthropic' })).toMatchObject({
      ok: true,
      data: { deleted: true },
    });
    expect(await call('rpc', 'b', 'auth.getUserKey', { email: B.email, provider: 'google' })).toMatchObject({
      ok: true,
      data: { exists: true, last4: 'BBBB' },
    });
  });

  it('no key in any response, in the server log or security log, or in the raw store', async () => {
    const dump = await backend.dump();
    // The dump is the real data: the vault records and ledger are in it.
    expect(dump).toContain('vault:');
    expect(dump).toContain(A.sub);
    const logs = gw.logs.join('\n') + (await backend.extraLogs());
    expect(logs).toContain('forbidden'); // the refusals were logged
    expect(seen.length).toBeGreaterThan(40);
    for (const [where, text] of Object.entries({ responses: seen.join('\n'), logs, store: dump })) {
      for (const key of [KEY_A, KEY_A2, KEY_B, 'sk-bob-takes-over', MARK]) expect(text, `${where} contains ${key}`).not.toContain(key);
    }
  });
});
