/**
 * An upstream's list_changed notifications make the gateway read that list again (and tell our
 * clients). One that floods them must not make it read the list once per notification: the SDK
 * client the gateway connects with debounces them (its `listChanged.debounceMs`), so a burst costs
 * a read or two. A guard on that: the gateway relies on it rather than on a queue of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, rpcCall, startAiServer, tokenFor, waitFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { startTrickyUpstream, type TrickyUpstream } from './helpers/trickyMcpUpstream.js';
import { envelope2026, messagesOf, modernPost, modernReply, readSse } from './helpers/mcpWire.js';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';

let ai: TestUpstream;
let tricky: TrickyUpstream;
let gw: AiServer;
let user: string;

beforeAll(async () => {
  ai = await createTestUpstream();
  tricky = await startTrickyUpstream();
  gw = await startAiServer(ai, {
    mcp: { auth: { authType: 'jwt' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { up: { type: 'http', url: tricky.url, timeoutMs: 10_000 } },
  });
  user = await tokenFor('gw-list-changed-user');
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await tricky?.stop();
  await ai?.close();
});

describe('MCP gateway: a flood of list_changed from an upstream', () => {
  it('50 tools/list_changed cost a couple of tools/list reads, not 50', async () => {
    const before = tricky.toolLists.count;
    const r = await rpcCall(gw.url, user, 'gateway.callTool', { server: 'up', tool: 'flood-list-changed', arguments: {} });
    expect(r.text, r.text).toContain('sent 50');
    await waitFor(() => tricky.toolLists.count > before, { timeoutMs: 10_000, what: 'the first read after list_changed' });
    // Deliberate: give any further reads the flood would cause time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const reads = tricky.toolLists.count - before;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(3);
    // And the list read last is the one served.
    const tools = await rpcCall<{ tools: Array<{ name: string }> }>(gw.url, user, 'gateway.listTools');
    expect(tools.result!.tools.map((t) => t.name)).toContain('up__echo');
  });
});

describe('MCP gateway: an upstream tools change reaches 2026-07-28 clients', () => {
  it('server/discover says tools can change, and a subscriptions/listen stream that asked for it gets notifications/tools/list_changed', async () => {
    const meta = envelope2026('gw-list-changed-2026');
    const auth = { authorization: `Bearer ${user}` };
    const discover = await modernReply(await fetch(`${gw.url}/mcp`, modernPost(1, 'server/discover', {}, meta, auth)));
    expect(discover.result?.capabilities?.tools).toMatchObject({ listChanged: true });

    const listen = await fetch(
      `${gw.url}/mcp`,
      modernPost(7, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, meta, auth),
    );
    expect(listen.status).toBe(200);
    let triggered = false;
    const events = await readSse(
      listen,
      (ev) => {
        const messages = messagesOf(ev);
        if (!triggered && messages.some((m) => m.method === 'notifications/subscriptions/acknowledged')) {
          triggered = true;
          // The upstream changes its tools (here: announces it), once the subscription stands.
          void rpcCall(gw.url, user, 'gateway.callTool', { server: 'up', tool: 'flood-list-changed', arguments: {} });
        }
        return messages.some((m) => m.method === 'notifications/tools/list_changed');
      },
      10_000,
    );
    const messages = messagesOf(events);
    // Before: the capability said false, so the SDK dropped the opt-in and nothing ever came.
    expect(messages[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true } },
    });
    expect(messages.find((m) => m.method === 'notifications/tools/list_changed')?.params?._meta).toMatchObject({
      'io.modelcontextprotocol/subscriptionId': 7,
    });
  });
});
