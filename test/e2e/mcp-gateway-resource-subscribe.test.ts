/**
 * resources/subscribe of an upstream's resource (docs/mcp-gateway.md, "What clients see"), with
 * server-everything over stdio, which offers subscriptions and, once its
 * `toggle-subscriber-updates` tool is called, sends `notifications/resources/updated` for every URI
 * it is subscribed to (at once, then every 5 s). The gateway refused the subscribe ("resource not
 * found": only our own registry was asked), so a 2025 client heard of no upstream resource's
 * change. Now the gateway subscribes at the upstream while a session is subscribed, relays its
 * updates to the subscribed sessions only, and unsubscribes there when the last subscriber
 * unsubscribes or its session ends. A session holds at most 100 such subscriptions: templates
 * match endless URIs, and each one is state here and at the upstream.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runtimeOfServices, type Runtime } from '@ai-backend/core/internal';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';

let server: TestServer;
let rt: Runtime;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    mcpServers: { every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 30_000 } },
  });
  rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt);
}, 45_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
});

/** A 2025 session that records the resource updates it hears. */
async function session(name: string) {
  const client = new Client({ name, version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`));
  await client.connect(transport);
  closers.push(() => client.close());
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  return { client, transport, updates };
}

const subscriptionsAtUpstream = () => rt.gateway.status().find((s) => s.name === 'every')!.resourceSubscriptions;
const toggle = (client: Client) => client.callTool({ name: 'every__toggle-subscriber-updates', arguments: {} });

describe('MCP gateway: resources/subscribe of an upstream resource', () => {
  it('relays the upstream updates to the subscribed sessions only, and unsubscribes there after the last', async () => {
    const [a, b, c] = await Promise.all([session('gw-sub-a'), session('gw-sub-b'), session('gw-sub-c')]);
    const { resources } = await a.client.listResources();
    const uri = resources.find((r) => r.uri.startsWith('demo://'))!.uri;
    await a.client.subscribeResource({ uri });
    await b.client.subscribeResource({ uri });
    expect(subscriptionsAtUpstream()).toBe(1);
    // Updates on: the upstream sends one at once, which both subscribers hear.
    await toggle(a.client);
    await vi.waitFor(() => expect(a.updates.length > 0 && b.updates.length > 0).toBe(true), { timeout: 15_000 });
    expect(new Set([...a.updates, ...b.updates])).toEqual(new Set([uri]));
    await toggle(a.client); // off

    // A leaves; B still subscribed, so the upstream stays subscribed, and only B hears the next update.
    await a.client.unsubscribeResource({ uri });
    expect(subscriptionsAtUpstream()).toBe(1);
    const [aHeard, bHeard] = [a.updates.length, b.updates.length];
    await toggle(a.client); // on: one more at once
    await vi.waitFor(() => expect(b.updates.length).toBeGreaterThan(bHeard), { timeout: 15_000 });
    await toggle(a.client); // off
    expect(a.updates).toHaveLength(aHeard);
    expect(c.updates).toEqual([]);

    // B's session ends: the last subscriber gone, the upstream is unsubscribed.
    await b.transport.terminateSession();
    await b.client.close();
    await vi.waitFor(() => expect(subscriptionsAtUpstream()).toBe(0), { timeout: 15_000 });
  }, 60_000);

  it('a session subscribes to at most 100 upstream resources (templates match endless URIs)', async () => {
    const s = await session('gw-sub-many');
    const uri = (i: number) => `demo://resource/dynamic/text/${i}`;
    for (let i = 1; i <= 100; i++) await s.client.subscribeResource({ uri: uri(i) });
    await expect(s.client.subscribeResource({ uri: uri(101) })).rejects.toThrow(/at most 100 upstream resources/);
    // One already held is no new subscription; one given up makes room.
    await s.client.subscribeResource({ uri: uri(1) });
    await s.client.unsubscribeResource({ uri: uri(1) });
    await s.client.subscribeResource({ uri: uri(101) });
    expect(subscriptionsAtUpstream()).toBe(100);
    await s.transport.terminateSession();
    await vi.waitFor(() => expect(subscriptionsAtUpstream()).toBe(0), { timeout: 15_000 });
  }, 60_000);

  it('a URI no upstream serves is still "resource not found"', async () => {
    const { client } = await session('gw-sub-unknown');
    await expect(client.subscribeResource({ uri: 'nowhere://nothing' })).rejects.toThrow(/resource not found/);
  });
});
