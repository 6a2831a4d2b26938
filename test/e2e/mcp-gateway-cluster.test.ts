/**
 * The MCP gateway across two instances sharing PostgreSQL and Redis, with real upstreams from npm
 * (server-everything over stdio on each instance and over Streamable HTTP): a priced tool is
 * metered like an AI call (held, settled, failures free, ledger audit clean under concurrent calls
 * from one user on both instances); an API key's tools rule decides what it sees and calls; an
 * upstream killed with SIGKILL fails fast and comes back without a restart; a server an
 * administrator adds on one instance serves on the other within a second.
 */
import { randomUUID } from 'node:crypto';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import type { ConfigInput } from '@ai-backend/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { EVERYTHING, startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';

const pgAt = await testPostgres();
const redisAt = await testRedis();
const PRICE = 1000;

describe.skipIf(!pgAt.ok || !redisAt.ok)('MCP gateway on two instances', () => {
  let upstream: TestUpstream;
  let http: Awaited<ReturnType<typeof startEverythingHttp>>;
  let a: AiServer;
  let b: AiServer;
  let user: string;
  let admin: string;
  const sub = `gw39-${randomUUID().slice(0, 8)}`;
  const pg = testPostgresOptions(pgAt, 'gw39');
  const keyPrefix = `e2e-gw39-${randomUUID()}:`;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    http = await startEverythingHttp();
    const config: ConfigInput = {
      storage: { type: 'postgres', postgres: pg, shared: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
      mcp: { auth: { authType: 'jwt', requireAuthForToolsCall: true } },
      gateway: { allowPrivateNetwork: true },
      mcpServers: {
        every: {
          command: process.execPath,
          args: [EVERYTHING, 'stdio'],
          timeoutMs: 5000,
          pricing: { tokensPerCall: 0, tools: { 'get-sum': PRICE } },
        },
      },
    };
    [a, b] = await Promise.all([startAiServer(upstream, config), startAiServer(upstream, config)]);
    user = await tokenFor(sub);
    admin = await tokenFor(`${sub}-admin`, { admin: true });
    await creditTokens(a.url, admin, sub, 1_000_000, `seed-${sub}`);
    for (const s of [a, b]) await waitForUpstreams(s.runtime);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(closers.map((c) => c().catch(() => undefined)));
    await a?.stop();
    await b?.stop();
    await http?.stop();
    await upstream?.close();
    await dropTestSchema(pgAt, pg.schema);
    await dropTestKeys(redisAt, keyPrefix);
  });

  const textOf = (r: unknown) => (r as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text ?? '';

  it('a priced tool: concurrent calls on both instances are each charged once, failures are free, the ledger audit is clean', async () => {
    const before = (await a.runtime.billing.balances(sub)).subscription;
    const calls = Array.from({ length: 12 }, (_, i) =>
      rpcCall((i % 2 ? a : b).url, user, 'gateway.callTool', { server: 'every', tool: 'get-sum', arguments: { a: i, b: 1 } }),
    );
    // Invalid arguments: the upstream refuses the call, which costs nothing.
    const failing = Array.from({ length: 4 }, (_, i) =>
      rpcCall((i % 2 ? a : b).url, user, 'gateway.callTool', { server: 'every', tool: 'get-sum', arguments: { a: 'x' } }),
    );
    const results = await Promise.all(calls);
    const failed = await Promise.all(failing);
    results.forEach((r, i) => expect(textOf(r.result)).toContain(String(i + 1)));
    for (const f of failed) expect(f.error !== undefined || (f.result as { isError?: boolean }).isError === true).toBe(true);
    const after = (await a.runtime.billing.balances(sub)).subscription;
    const perCall = a.runtime.billing.withFee(PRICE);
    expect(before - after).toBe(12 * perCall);
    const audit = await b.runtime.billing.ledger.audit(sub);
    expect(audit.consistent).toBe(true);
    expect(audit.balances.subscription).toBe(after);
    // An unpriced tool costs nothing.
    expect(
      textOf((await rpcCall(a.url, user, 'gateway.callTool', { server: 'every', tool: 'echo', arguments: { message: 'free' } })).result),
    ).toBe('Echo: free');
    expect((await a.runtime.billing.balances(sub)).subscription).toBe(after);
  });

  it('an API key with a tools rule sees and calls only what it names, on /mcp and /rpc', async () => {
    const made = await rpcCall<{ key: string }>(a.url, user, 'keys.create', { name: 'narrow', tools: ['every__echo', 'greeting'] });
    const key = made.result!.key;
    const client = new LegacyClient({ name: 'narrow', version: '1' });
    await client.connect(new LegacyTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    closers.push(() => client.close());
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('every__echo');
    expect(names).toContain('greeting');
    expect(names.filter((n) => n.startsWith('every__') && n !== 'every__echo')).toEqual([]);
    expect(textOf(await client.callTool({ name: 'every__echo', arguments: { message: 'key' } }))).toBe('Echo: key');
    const refused = await client.callTool({ name: 'every__get-sum', arguments: { a: 1, b: 2 } }).then(
      () => 'answered',
      (e: Error) => e.message,
    );
    expect(refused).toMatch(/unknown tool: every__get-sum/);
    const listed = await rpcCall<{ tools: Array<{ name: string }> }>(a.url, key, 'gateway.listTools');
    expect(listed.result!.tools.map((t) => t.name)).toEqual(['every__echo']);
    const viaRpc = await rpcCall(a.url, key, 'gateway.callTool', { server: 'every', tool: 'get-sum', arguments: { a: 1, b: 2 } });
    const unknown = await rpcCall(a.url, key, 'gateway.callTool', { server: 'every', tool: 'no-such-tool', arguments: {} });
    expect(viaRpc.error?.message).toBe('unknown tool: every__get-sum');
    expect(viaRpc.error?.code).toBe(unknown.error?.code);
  });

  it('an upstream killed with SIGKILL fails fast and comes back without a restart', async () => {
    // Ready first (a retry of this test may start while an earlier run's restart is still backing off).
    const every = () => a.runtime.gateway.status().find((s) => s.name === 'every')!;
    await waitFor(() => every().state === 'ready', { timeoutMs: 30_000 });
    const pid = every().pid!;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => a.runtime.gateway.status().find((s) => s.name === 'every')!.state !== 'ready', { timeoutMs: 5000 });
    const started = Date.now();
    const during = await rpcCall(a.url, user, 'gateway.callTool', { server: 'every', tool: 'echo', arguments: { message: 'down' } });
    expect(Date.now() - started).toBeLessThan(1000);
    const message = during.error?.message ?? textOf(during.result);
    expect(message).toMatch(/MCP server "every" is unavailable/);
    // Instance b's own upstream process was never touched.
    expect(
      textOf((await rpcCall(b.url, user, 'gateway.callTool', { server: 'every', tool: 'echo', arguments: { message: 'b' } })).result),
    ).toBe('Echo: b');
    // The restart waits out the backoff (250 ms doubling): on a loaded machine a slow start of the
    // new process can cost a few rounds of it, so the bound is generous; the claim is that it comes back.
    await waitFor(() => every().state === 'ready', { timeoutMs: 30_000 });
    const newPid = a.runtime.gateway.status().find((s) => s.name === 'every')!.pid;
    expect(newPid).not.toBe(pid);
    expect(
      textOf((await rpcCall(a.url, user, 'gateway.callTool', { server: 'every', tool: 'echo', arguments: { message: 'back' } })).result),
    ).toBe('Echo: back');
  }, 90_000);

  it('a remote server an administrator adds on one instance serves on the other within a second; stdio is refused', async () => {
    const added = await rpcCall(a.url, admin, 'gateway.addServer', { name: 'web', server: { type: 'http', url: http.url } });
    expect(added.result).toEqual({ added: 'web' });
    const t0 = Date.now();
    await waitFor(() => b.runtime.gateway.status().some((s) => s.name === 'web' && s.state === 'ready'), { timeoutMs: 5000 });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(
      textOf((await rpcCall(b.url, user, 'gateway.callTool', { server: 'web', tool: 'echo', arguments: { message: 'added' } })).result),
    ).toBe('Echo: added');
    const stdio = await rpcCall(a.url, admin, 'gateway.addServer', { name: 'evil', server: { command: 'sh', args: ['-c', 'id'] } });
    expect(stdio.error?.message).toMatch(/stdio servers come only from the config file/);
    const byUser = await rpcCall(a.url, user, 'gateway.addServer', { name: 'web2', server: { type: 'http', url: http.url } });
    expect(byUser.error?.data?.appCode).toBe('FORBIDDEN');
    expect((await rpcCall(b.url, admin, 'gateway.removeServer', { name: 'web' })).result).toEqual({ removed: true });
    await waitFor(() => !a.runtime.gateway.status().some((s) => s.name === 'web'), { timeoutMs: 5000 });
    const gone = await rpcCall(a.url, user, 'gateway.callTool', { server: 'web', tool: 'echo', arguments: { message: 'x' } });
    expect(gone.error?.message).toBe('unknown tool: web__echo');
  });
});
