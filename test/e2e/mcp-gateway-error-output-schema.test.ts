/**
 * A gateway tool call that fails on our side (here: 402, no platform tokens for a priced tool) is
 * a tool error the client can read, also when the upstream tool declares an outputSchema. Such an
 * error used to carry `structuredContent: { error }`, which the 1.x SDK client (2025-11-25)
 * validates against the tool's output schema even with isError: the caller got a thrown
 * "Structured content does not match the tool's output schema" instead of the refusal. Our own
 * tools already left structuredContent out when they declare an output schema; gateway tools now
 * follow the same rule (the tool as the caller's tools/list shows it).
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, mcpClient, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';

let upstream: TestUpstream;
let web: Awaited<ReturnType<typeof startEverythingHttp>>;
let gw: AiServer;

beforeAll(async () => {
  upstream = await createTestUpstream();
  web = await startEverythingHttp();
  gw = await startAiServer(upstream, {
    mcp: { auth: { authType: 'jwt' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { web: { type: 'http', url: web.url, timeoutMs: 10_000, pricing: { tokensPerCall: 100 } } },
  });
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await web?.stop();
  await upstream?.close();
});

type ToolResult = { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };

describe('MCP gateway: our refusals of an upstream tool with an outputSchema', () => {
  it('1.x client (2025-11-25), after tools/list: the refusal is a readable tool error without structuredContent', async () => {
    const client = await mcpClient(gw.url, await tokenFor('gw-outschema-legacy'));
    try {
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'web__get-structured-content')?.outputSchema).toBeDefined();
      const r = (await client.callTool({ name: 'web__get-structured-content', arguments: { location: 'Chicago' } })) as ToolResult;
      expect(r.isError).toBe(true);
      expect(r.content[0]?.text).toContain('PAYMENT_REQUIRED');
      expect(r.structuredContent).toBeUndefined();
      // A tool without an output schema keeps the error object in structuredContent, as our own tools do.
      const echo = (await client.callTool({ name: 'web__echo', arguments: { message: 'hi' } })) as ToolResult;
      expect(echo.isError).toBe(true);
      expect(echo.structuredContent).toMatchObject({ error: { appCode: 'PAYMENT_REQUIRED' } });
    } finally {
      await client.close();
    }
  });

  it('v2 client (2026-07-28): the same', async () => {
    const client = new ModernClient({ name: 'gw-outschema', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(
      new ModernTransport(new URL(`${gw.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${await tokenFor('gw-outschema-modern')}` } },
      }),
    );
    try {
      await client.listTools();
      const r = (await client.callTool({ name: 'web__get-structured-content', arguments: { location: 'Chicago' } })) as ToolResult;
      expect(r.isError).toBe(true);
      expect(r.content[0]?.text).toContain('PAYMENT_REQUIRED');
      expect(r.structuredContent).toBeUndefined();
    } finally {
      await client.close();
    }
  });
});
