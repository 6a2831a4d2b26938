/**
 * A server's `tools: { allow, deny }` globs (docs/mcp-gateway.md, "Permissions") over upstream
 * tool names that a path-glob library treats specially: a leading dot (a legal MCP tool name
 * character) and a slash (used by some servers to namespace tools). A deny rule an operator
 * writes must hide them like any other name, on /mcp and on /rpc.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startTrickyUpstream, type TrickyUpstream } from './helpers/trickyMcpUpstream.js';

let server: TestServer;
let upstream: TrickyUpstream;
let client: LegacyClient;

beforeAll(async () => {
  upstream = await startTrickyUpstream();
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      // What an operator writes to keep the hidden and the admin tools away from callers.
      guarded: { type: 'http', url: upstream.url, tools: { deny: ['*hidden*', 'admin*'] } },
      // Only the listed kinds of tool: echo and ask-roots pass, nothing else.
      narrow: { type: 'http', url: upstream.url, tools: { allow: ['echo', 'ask-*'] } },
    },
  });
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
  client = new LegacyClient({ name: 'ide', version: '1' });
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await upstream?.stop();
});

async function rpcCall(serverName: string, tool: string): Promise<{ result?: unknown; error?: { data?: { appCode?: string } } }> {
  const res = await fetch(`${server.url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'gateway.callTool', params: { server: serverName, tool, arguments: {} } }),
  });
  return (await res.json()) as { result?: unknown; error?: { data?: { appCode?: string } } };
}

describe('MCP gateway: tools.allow / tools.deny over unusual tool names', () => {
  it('deny globs hide names with a leading dot or a slash from tools/list', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('guarded__echo');
    expect(names).not.toContain('guarded__.hidden');
    expect(names).not.toContain('guarded__admin/wipe');
    expect(names.filter((n) => n.startsWith('narrow__')).sort()).toEqual(['narrow__ask-roots', 'narrow__echo']);
  });

  it('a denied name is an unknown tool on /mcp and on /rpc', async () => {
    for (const tool of ['.hidden', 'admin/wipe']) {
      await expect(client.callTool({ name: `guarded__${tool}`, arguments: {} })).rejects.toThrow(/unknown tool/);
      expect((await rpcCall('guarded', tool)).error?.data?.appCode).toBe('NOT_FOUND');
    }
    expect((await rpcCall('guarded', 'echo')).result).toMatchObject({ content: [{ type: 'text', text: 'called echo' }] });
  });
});
