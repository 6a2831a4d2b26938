import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '@ai-backend/core';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import { createTestUpstream, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { RawMcp } from './helpers/rawMcp.js';

/**
 * Demoting an administrator demotes their API keys at once, across real servers sharing
 * PostgreSQL and Redis (docs/security.md "When authority is checked"). Server `listed` still has
 * the owner in admin.users; server `demoted` runs the configuration without them, as after the
 * operator removed them. The key made while listed is an administrator only where its owner is
 * listed, on every entry point, and the owner cannot give the scope again, whatever their token
 * carries. Before, the key's admin scope made it an administrator forever (it could credit its
 * owner 1,000,000 tokens from anywhere).
 */
const pgAt = await testPostgres();
const redisAt = await testRedis();

describe.skipIf(!pgAt.ok || !redisAt.ok)("a demoted administrator's keys, two servers on one store", () => {
  const label = 'keydemotion';
  const pg = testPostgresOptions(pgAt, label);
  const keyPrefix = `e2e-${label}-${randomUUID()}:`;
  const owner = `ops-${randomUUID().slice(0, 8)}`;
  const storage: NonNullable<ConfigInput>['storage'] = {
    type: 'postgres',
    postgres: pg,
    shared: 'redis',
    redis: { host: redisAt.host, port: redisAt.port, keyPrefix },
  };
  let upstream: TestUpstream;
  let listed: AiServer;
  let demoted: AiServer;
  let adminKey: string;
  let keyId: string;

  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    listed = await startAiServer(upstream, { storage, admin: { users: [owner] } });
    demoted = await startAiServer(upstream, { storage });
    // The owner's token carries no admin scope: they are an administrator by the listing alone.
    const made = await rpcCall(listed.url, await tokenFor(owner), 'keys.create', { name: 'ops', scopes: ['mcp:admin'] });
    expect(made.result, made.text).toBeDefined();
    adminKey = made.result.key;
    keyId = made.result.apiKey.id;
  });
  afterAll(async () => {
    await listed?.stop();
    await demoted?.stop();
    await upstream?.close();
    await dropTestSchema(pgAt, pg.schema);
    await dropTestKeys(redisAt, keyPrefix);
  });

  const balance = async (gw: AiServer) =>
    (await rpcCall(gw.url, await tokenFor(owner), 'billing.getTokenBalance')).result.virtualTokenBalance as number;

  it('acts as an administrator where its owner is listed, and nowhere else, on every entry point', async () => {
    expect((await rpcCall(listed.url, adminKey, 'admin.status')).result).toBeDefined();
    const refused = await rpcCall(demoted.url, adminKey, 'admin.status');
    expect(refused.error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    const trpc = await fetch(`${demoted.url}/trpc/admin.status`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(trpc.status).toBe(403);
    await trpc.text();
    const mcp = new RawMcp(demoted.url, adminKey);
    expect((await mcp.initialize()).status).toBe(200);
    const tool = await mcp.callTool('addServerWorkspace', { id: 'pwned', path: '/tmp', name: 'x' });
    expect(tool.message?.result?.isError ?? tool.message?.error !== undefined).toBe(true);
    expect(JSON.stringify(tool.message)).toMatch(/FORBIDDEN|administrator access required/);
  });

  it('cannot credit its owner on the demoted server', async () => {
    const before = await balance(demoted);
    const credit = await rpcCall(demoted.url, adminKey, 'billing.creditTokens', {
      userId: owner,
      tokens: 1_000_000,
      type: 'subscription',
      idempotencyKey: `k-${randomUUID()}`,
    });
    expect(credit.error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    expect(await balance(demoted)).toBe(before);
  });

  it('the demoted owner cannot give the admin scope again, even with a token carrying mcp:admin', async () => {
    for (const token of [await tokenFor(owner), await tokenFor(owner, { admin: true })]) {
      const again = await rpcCall(demoted.url, token, 'keys.create', { name: 'again', scopes: ['mcp:admin'] });
      expect(again.error?.data).toMatchObject({ appCode: 'FORBIDDEN', details: { reason: 'scope_not_held' } });
      const widen = await rpcCall(demoted.url, token, 'keys.update', { id: keyId, scopes: ['mcp:admin'] });
      expect(widen.error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    }
  });

  it('a server restarted with the new listing demotes the key on its first call', async () => {
    await listed.stop();
    listed = await startAiServer(upstream, { storage });
    expect((await rpcCall(listed.url, adminKey, 'admin.status')).error?.data).toMatchObject({ appCode: 'FORBIDDEN' });
    // Still its owner's key for everything else.
    expect((await rpcCall(listed.url, adminKey, 'billing.getTokenBalance')).result).toBeDefined();
  });
});
