import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import type { ConfigInput } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * admin.statistics, admin.clearCache and admin.getUserInfo over real servers. Statistics live in
 * the store: two instances sharing Redis report the same figures, and a restarted instance keeps them.
 */
const redisAt = await testRedis();
const pgAt = await testPostgres();
const keyPrefix = `ai-backend-test:stats:${process.pid}:${randomUUID().slice(0, 8)}:`;
const shared: ConfigInput = {
  storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
  statistics: { flushIntervalMs: 100 },
  admin: { users: ['listed-admin@example.com'] },
};

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream();
});
afterAll(async () => {
  await upstream.close();
  if (redisAt.ok) await dropTestKeys(redisAt, keyPrefix);
});

type Snapshot = {
  days: number;
  total: number;
  errors: number;
  since: string;
  procedures: Array<{ transport: string; path: string; count: number; errors: number; latencyMs: { p50: number | null } }>;
  byDay: Array<{ day: string; total: number }>;
};
const stats = async (s: AiServer, token: string, days?: number) => {
  const r = await rpcCall<Snapshot>(s.url, token, 'admin.statistics', days === undefined ? {} : { days });
  if (!r.result) throw new Error(r.text);
  return r.result;
};
const echoCount = (snap: Snapshot, transport = 'rpc') =>
  snap.procedures.find((p) => p.path === 'mcp.echo' && p.transport === transport)?.count ?? 0;

describe.skipIf(!redisAt.ok)('two instances sharing Redis', () => {
  let a: AiServer;
  let b: AiServer;
  let admin: string;
  let user: string;
  beforeAll(async () => {
    a = await startAiServer(upstream, shared);
    b = await startAiServer(upstream, shared);
    admin = await tokenFor('stats-admin', { admin: true });
    user = await tokenFor('stats-user', { email: 'Stats.User@Example.com' });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('admin.statistics reports the same cluster-wide figures on both instances', async () => {
    for (let i = 0; i < 3; i++) await rpcCall(a.url, user, 'mcp.echo', { message: `a${i}` });
    for (let i = 0; i < 2; i++) await rpcCall(b.url, user, 'mcp.echo', { message: `b${i}` });
    await rpcCall(b.url, user, 'admin.status', {}); // refused: counted as an error
    // Both instances flush their counters to Redis every 100 ms: wait until each sees all of them.
    const flushed = (inst: AiServer) =>
      waitFor(
        async () => {
          const snap = await stats(inst, admin);
          return echoCount(snap) >= 5 && (snap.procedures.find((p) => p.path === 'admin.status')?.errors ?? 0) >= 1 && snap;
        },
        { what: 'both instances flushed their counters' },
      );
    const fromA = await flushed(a);
    const fromB = await flushed(b);
    expect(echoCount(fromA)).toBe(5);
    expect(echoCount(fromB)).toBe(5);
    expect(fromA.procedures.find((p) => p.path === 'admin.status')?.errors).toBe(1);
    expect(fromA.procedures.find((p) => p.path === 'mcp.echo')!.latencyMs.p50).toEqual(expect.any(Number));
    expect(fromA.byDay.at(-1)!.day).toBe(new Date().toISOString().slice(0, 10));
    expect(fromA.days).toBe(7);
  });

  it('honours days: a record from 10 days ago counts for days=30, not for days=7', async () => {
    const old = new Date(Date.now() - 10 * 86_400_000).toISOString().slice(0, 10);
    const runtime = await a.server.ready();
    await runtime.storage.set(`stats:${old}:rpc:mcp.echo`, {
      count: 40,
      errors: 2,
      totalMs: 400,
      buckets: [40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    });
    // As a flush that day would have left it: the record and its name in the day's list (reads go by the list).
    await runtime.storage.set(`stats:names:${old}`, ['rpc:mcp.echo']);
    const week = await stats(b, admin, 7);
    const month = await stats(b, admin, 30);
    expect(echoCount(month)).toBe(echoCount(week) + 40);
    expect(month.byDay.map((d) => d.day)).toContain(old);
    expect(week.byDay.map((d) => d.day)).not.toContain(old);
    expect(month.since).toBe(new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10));
    const bad = await rpcCall(b.url, admin, 'admin.statistics', { days: 0 });
    expect(bad.error?.code).toBe(-32602);
  });

  it('survives a restart: a new instance on the same store reads the same figures', async () => {
    const before = echoCount(await stats(a, admin, 30));
    await b.stop();
    b = await startAiServer(upstream, shared);
    expect(echoCount(await stats(b, admin, 30))).toBe(before);
  });

  it("admin.clearCache 'usage' clears statistics cluster-wide; 'tokens' clears only the verified-token cache", async () => {
    const tokens = await rpcCall<{ cleared: string[] }>(a.url, admin, 'admin.clearCache', { target: 'tokens' });
    expect(tokens.result?.cleared).toEqual(['tokens']);
    expect(echoCount(await stats(b, admin, 30))).toBeGreaterThan(0);
    const usage = await rpcCall<{ cleared: string[] }>(a.url, admin, 'admin.clearCache', { target: 'usage' });
    expect(usage.result?.cleared).toEqual(['statistics']);
    expect(echoCount(await stats(b, admin, 30))).toBe(0);
    const all = await rpcCall<{ cleared: string[] }>(b.url, admin, 'admin.clearCache', {});
    expect(all.result?.cleared).toEqual(['tokens', 'responses', 'statistics']);
    // A token still works after its cache entry is gone (it is verified again).
    expect((await rpcCall(a.url, user, 'mcp.echo', { message: 'again' })).result).toEqual({ message: 'again' });
  });

  it("admin.clearCache 'usage' also drops the counts another instance has not written yet", async () => {
    // Instances that write their counts rarely: what b counted before the clear is still pending.
    const slow = { ...shared, statistics: { flushIntervalMs: 60_000 } };
    const c = await startAiServer(upstream, slow);
    const d = await startAiServer(upstream, slow);
    try {
      await rpcCall(d.url, user, 'mcp.echo', { message: 'before the clear' });
      const cleared = await rpcCall<{ instances: string }>(c.url, admin, 'admin.clearCache', { target: 'usage' });
      expect(cleared.result?.instances).toBe('all');
      // The signal travels through Redis pub/sub; d then answers from the store after its own flush.
      await waitFor(async () => echoCount(await stats(d, admin, 1)) === 0, { timeoutMs: 2000, what: "d's pending counts dropped" });
      await rpcCall(d.url, user, 'mcp.echo', { message: 'after the clear' });
      expect(echoCount(await stats(d, admin, 1))).toBe(1);
    } finally {
      await c.stop();
      await d.stop();
    }
  });

  it('admin.getUserInfo resolves users by id or e-mail and reports the permissions the access rules use', async () => {
    const scopeAdmin = await tokenFor('scope-admin', { admin: true, email: 'scope.admin@example.com' });
    await rpcCall(a.url, scopeAdmin, 'mcp.echo', { message: 'hi' });
    await rpcCall(a.url, user, 'mcp.echo', { message: 'hi' });
    // Profiles are written off the request path: wait until both are there.
    const profile = (userId: string) =>
      waitFor(
        async () => {
          const r = await rpcCall(b.url, admin, 'admin.getUserInfo', { userId });
          return r.result?.known === true && r;
        },
        { what: `the profile of ${userId}` },
      );
    await profile('scope-admin');
    const byEmail = await profile('stats.user@example.com');
    expect(byEmail.result).toMatchObject({
      userId: 'stats-user',
      email: 'Stats.User@Example.com',
      known: true,
      isAdmin: false,
      permissions: ['user'],
      scopes: ['mcp'],
    });
    const scoped = await rpcCall(b.url, admin, 'admin.getUserInfo', { userId: 'scope-admin' });
    expect(scoped.result).toMatchObject({ isAdmin: true, permissions: ['admin', 'user'], adminVia: 'token' });
    // Listed in admin.users but never seen: an administrator by configuration.
    const listed = await rpcCall(b.url, admin, 'admin.getUserInfo', { userId: 'listed-admin@example.com' });
    expect(listed.result).toMatchObject({ known: false, isAdmin: true, adminVia: 'admin.users' });
    const unknown = await rpcCall(b.url, admin, 'admin.getUserInfo', { userId: 'nobody-' + randomUUID() });
    expect(unknown.error?.data?.code).toBe('NOT_FOUND');
    const refused = await rpcCall(b.url, user, 'admin.getUserInfo', { userId: 'stats-user' });
    expect(refused.error?.data?.code).toBe('FORBIDDEN');
  });

  it('admin.getUserInfo knows an MCP client that only connected and listed tools', async () => {
    const mcpAdmin = await tokenFor('mcp-only-admin', { admin: true, email: 'mcp.only@example.com' });
    const client = await mcpClient(a.url, mcpAdmin);
    await client.listTools();
    await client.close();
    const info = await waitFor(
      async () => {
        const r = await rpcCall(b.url, admin, 'admin.getUserInfo', { userId: 'mcp.only@example.com' });
        return r.result?.known === true && r.result;
      },
      { what: 'the profile of the MCP-only caller' },
    );
    expect(info).toMatchObject({ userId: 'mcp-only-admin', isAdmin: true, permissions: ['admin', 'user'], adminVia: 'token' });
  });
});

describe.skipIf(!redisAt.ok || !pgAt.ok)('two instances on PostgreSQL + Redis that write their counts rarely', () => {
  const prefix = `${keyPrefix}rare:`;
  const pg = pgAt.ok ? testPostgresOptions(pgAt, 'stats_rare') : undefined;
  let a: AiServer;
  let b: AiServer;
  let admin: string;
  let user: string;
  beforeAll(async () => {
    // A minute between flushes: only the read's cluster-wide flush can bring the other instance's counts in.
    const config: ConfigInput = {
      storage: { type: 'postgres', postgres: pg!, shared: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix: prefix } },
      statistics: { flushIntervalMs: 60_000 },
    };
    a = await startAiServer(upstream, config);
    b = await startAiServer(upstream, config);
    admin = await tokenFor('rare-admin', { admin: true });
    user = await tokenFor('rare-user');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    if (pg) await dropTestSchema(pgAt, pg.schema);
  });

  it('a read right after calls on both instances sees all of them, and both instances answer the same figures', async () => {
    for (let i = 0; i < 3; i++) await rpcCall(a.url, user, 'mcp.echo', { message: `a${i}` });
    for (let i = 0; i < 2; i++) await rpcCall(b.url, user, 'mcp.echo', { message: `b${i}` });
    await rpcCall(b.url, user, 'admin.status', {}); // refused: an error
    const fromA = await stats(a, admin);
    const fromB = await stats(b, admin);
    expect(echoCount(fromA)).toBe(5);
    expect(fromA.procedures.find((p) => p.path === 'admin.status')?.errors).toBe(1);
    // Reading does not count itself, so a second read (on the other instance) is identical.
    expect(fromA.procedures.some((p) => p.path === 'admin.statistics')).toBe(false);
    expect(fromB).toEqual(fromA);
    // More calls on B are seen at once by a read on A.
    await rpcCall(b.url, user, 'mcp.echo', { message: 'b2' });
    expect(echoCount(await stats(a, admin))).toBe(6);
  });
  it("admin.overview's series over time by provider and model are cluster-wide: calls on both instances, read at once on either", async () => {
    await creditTokens(a.url, admin, 'rare-user', 100_000, 'rare-seed');
    const call = (inst: AiServer, provider: string, content = 'hello') =>
      rpcCall(inst.url, user, 'ai.generateText', { content, systemPrompt: 's', provider, options: { maxTokens: 20 } });
    for (let i = 0; i < 2; i++) expect((await call(a, 'openai')).result).toBeDefined();
    expect((await call(b, 'anthropic')).result).toBeDefined();
    expect((await call(b, 'google', 'fails [[upstream:500]]')).error).toBeDefined();
    type Series = {
      days: string[];
      byProvider: Array<{ key: string; calls: number[]; failures: number[]; tokens: number[]; p50Ms: Array<number | null> }>;
      byModel: Array<{ key: string; calls: number[] }>;
      upstreamByProvider: Array<{ provider: string; calls: number; failures: number }>;
    };
    const overview = async (inst: AiServer) =>
      (
        await rpcCall<{ series: Series; usage: { byProvider: Array<{ provider: string; tokensUsed: number }> } }>(
          inst.url,
          admin,
          'admin.overview',
          {},
        )
      ).result!;
    const fromA = await overview(a);
    const today = fromA.series.days.length - 1;
    const row = (key: string) => fromA.series.byProvider.find((p) => p.key === key)!;
    // Flushed a minute apart: only the read's cluster-wide flush brings B's calls to A's answer.
    expect(row('openai').calls[today]).toBe(2);
    expect(row('anthropic').calls[today]).toBe(1);
    expect(row('google').failures[today]).toBeGreaterThanOrEqual(1);
    expect(row('google').failures[today]).toBe(row('google').calls[today]);
    expect(row('openai').p50Ms[today]).toBeGreaterThan(0);
    expect(row('anthropic').tokens[today]).toBe(fromA.usage.byProvider.find((p) => p.provider === 'anthropic')!.tokensUsed);
    expect(fromA.series.byModel.some((m) => m.key.startsWith('anthropic/') && m.calls[today] === 1)).toBe(true);
    // The other instance answers the same series.
    const fromB = await overview(b);
    expect(fromB.series.byProvider).toEqual(fromA.series.byProvider);
    expect(fromB.series.byModel).toEqual(fromA.series.byModel);
    expect(fromB.series.upstreamByProvider).toEqual(fromA.series.upstreamByProvider);
  });
});
