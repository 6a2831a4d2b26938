/**
 * MCP roots → client workspaces: a client that declares `capabilities.roots` is asked for
 * roots/list after initialization (over its GET stream) and again on
 * notifications/roots/list_changed; listClientWorkspaces shows the roots for that session only.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';

let srv: TestServer;
const clients: Client[] = [];
beforeAll(async () => {
  srv = await startTestServer({ mcp: { auth: { authType: 'none' } } });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await srv?.stop();
});

type Workspace = { uri: string; name?: string; source?: string };

async function listWorkspaces(client: Client): Promise<Workspace[]> {
  const r = await client.callTool({ name: 'listClientWorkspaces', arguments: { detailed: true } });
  const text = (r.content as Array<{ text: string }>)[0]!.text;
  const parsed = JSON.parse(text) as Workspace[] | { workspaces: Workspace[] };
  return Array.isArray(parsed) ? parsed : parsed.workspaces;
}

describe('MCP roots', () => {
  it('asks roots/list after initialize and refreshes on list_changed; roots stay with their session', async () => {
    let roots = [{ uri: 'file:///home/ann/project', name: 'project' }];
    let asked = 0;
    const client = new Client({ name: 'roots-client', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked++;
      return { roots };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
    clients.push(client);

    await expect.poll(() => asked, { timeout: 3000 }).toBe(1);
    await expect
      .poll(async () => (await listWorkspaces(client)).filter((w) => w.source === 'mcp-roots').map((w) => w.uri))
      .toEqual(['file:///home/ann/project']);

    roots = [
      { uri: 'file:///home/ann/project', name: 'project' },
      { uri: 'file:///home/ann/docs', name: 'docs' },
      // A file URI the client-workspace service refuses (encoded dot segments) is dropped.
      { uri: 'file:///home/ann/%2e%2e/etc', name: 'dropped' },
    ];
    await client.sendRootsListChanged();
    await expect.poll(() => asked, { timeout: 3000 }).toBe(2);
    await expect
      .poll(async () => (await listWorkspaces(client)).filter((w) => w.source === 'mcp-roots').map((w) => w.uri))
      .toEqual(['file:///home/ann/project', 'file:///home/ann/docs']);

    // Another session does not see them.
    const other = new Client({ name: 'other', version: '1.0.0' });
    await other.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
    clients.push(other);
    expect((await listWorkspaces(other)).filter((w) => w.source === 'mcp-roots')).toEqual([]);
  });

  it('a client without the roots capability is never asked', async () => {
    let asked = false;
    const client = new Client({ name: 'no-roots', version: '1.0.0' });
    // Registering a handler without declaring the capability is refused by the SDK itself,
    // so observe the wire instead: no roots/list may arrive.
    const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`));
    await client.connect(transport);
    clients.push(client);
    const original = transport.onmessage!;
    transport.onmessage = (m) => {
      if ((m as { method?: string }).method === 'roots/list') asked = true;
      original(m);
    };
    // Asserting that something does not happen: a roots/list would come right after initialization (a deliberate pause).
    await new Promise((r) => setTimeout(r, 300));
    expect(asked).toBe(false);
    expect((await listWorkspaces(client)).filter((w) => w.source === 'mcp-roots')).toEqual([]);
  });

  it("a session's registered client workspaces go with it: closing it leaves nothing stored", async () => {
    const { storage } = await srv.server.ready();
    const stored = async () => (await storage.keys('ws:client:')).filter((k) => k.startsWith('ws:client:session'));
    const before = await stored();
    const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`));
    const client = new Client({ name: 'registers', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    for (const id of ['one', 'two']) {
      const r = await client.callTool({ name: 'registerClientWorkspace', arguments: { id, uri: `file:///home/ann/${id}` } });
      expect(r.isError).toBeFalsy();
    }
    expect((await stored()).length).toBe(before.length + 2);
    await transport.terminateSession();
    await expect.poll(stored, { timeout: 3000 }).toEqual(before);
  });
});
