/**
 * The gateway's own search_tools and call_tool (expose: 'search') go through the same procedure
 * as every upstream tool call (gateway.callTool), so the per-procedure statistics count them,
 * failed calls as errors; with a real upstream from npm (server-everything over stdio).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

let server: TestServer;
let client: Client | undefined;

beforeAll(async () => {
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    mcpServers: {
      big: { command: process.execPath, args: [EVERYTHING, 'stdio'], expose: 'search' },
      listed: { command: process.execPath, args: [EVERYTHING, 'stdio'], tools: { allow: ['echo'] } },
    },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt, { timeoutMs: 60_000 });
}, 90_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
});

describe('tool search in the statistics', () => {
  it('search_tools and call_tool are counted like any upstream tool call (gateway.callTool on mcp), a refused one as an error', async () => {
    const rt = runtimeOfServices(await server.server.ready());
    const counted = async () => {
      const row = (await rt.stats.snapshot(1)).procedures.find((p) => p.transport === 'mcp' && p.path === 'gateway.callTool');
      return { count: row?.count ?? 0, errors: row?.errors ?? 0 };
    };
    client = new Client({ name: 'gw-search-stats', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    const before = await counted();
    const found = (await client.callTool({ name: 'search_tools', arguments: { query: 'echo' } })) as {
      structuredContent?: { tools: Array<{ name: string }> };
    };
    expect(found.structuredContent?.tools.map((t) => t.name)).toContain('big__echo');
    const echoed = (await client.callTool({ name: 'call_tool', arguments: { name: 'big__echo', arguments: { message: 'counted' } } })) as {
      content: Array<{ text?: string }>;
    };
    expect(echoed.content[0]?.text).toBe('Echo: counted');
    // A listed server's tool is not reachable through call_tool: a tool error, counted as a failed call.
    const refused = (await client.callTool({ name: 'call_tool', arguments: { name: 'listed__echo', arguments: { message: 'x' } } })) as {
      isError?: boolean;
    };
    expect(refused.isError).toBe(true);
    // An upstream tool called by its own name, for comparison: the same procedure.
    await client.callTool({ name: 'listed__echo', arguments: { message: 'direct' } });
    const after = await counted();
    expect(after.count - before.count).toBe(4);
    expect(after.errors - before.errors).toBe(1);
  });
});
