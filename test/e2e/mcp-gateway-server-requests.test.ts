/**
 * What an upstream may ask our clients during a tool call (docs/mcp-gateway.md, "What clients
 * see"): only sampling and elicitation are forwarded to the caller's client; roots are never
 * forwarded ("roots asked by any upstream: not forwarded"), because they describe the client's
 * workspace. An upstream that asks roots/list on the call's own stream, where the gateway routes
 * sampling and elicitation to the one caller, gets an error, and the client is never asked.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startTrickyUpstream, type TrickyUpstream } from './helpers/trickyMcpUpstream.js';

let server: TestServer;
let upstream: TrickyUpstream;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  upstream = await startTrickyUpstream();
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { up: { type: 'http', url: upstream.url, timeoutMs: 10_000 } },
  });
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
  await upstream?.stop();
});

type ToolResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };
const textOf = (r: unknown) => (r as ToolResult).content.map((c) => c.text ?? '').join('\n');

describe('MCP gateway: requests an upstream sends on a tool call stream', () => {
  it("roots/list is not forwarded to the caller's client, which declared roots", async () => {
    const client = new LegacyClient({ name: 'ide', version: '1' }, { capabilities: { roots: { listChanged: true }, sampling: {} } });
    // Our own server asks for roots too (workspace sync): what matters is that the upstream never gets them.
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: 'file:///home/alice/secret-project', name: 'secret-project' }],
    }));
    await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
    closers.push(() => client.close());

    const r = await client.callTool({ name: 'up__ask-roots', arguments: {} });
    expect(textOf(r)).not.toContain('secret-project');
    expect(upstream.asked.at(-1)).toMatchObject({ method: 'roots/list', outcome: 'refused' });
    expect(upstream.asked.map((a) => a.detail).join('\n')).not.toContain('secret-project');
  });
});
